/**
 * `make bench`: the ingest benchmark. In one run, on the same N events served by the
 * simulator (`mock-api --synthetic-events N`, pre-rendered so it is not the bottleneck), it
 * measures:
 *   1. limit:   DuckDB loading the same events from a local NDJSON file into a table with
 *               the columns of raw.events (publishedTime parsed, message and envelope JSON);
 *   2. drain:   fetching every page over HTTP with the job's own client, discarding it;
 *   3. extract: `recruit-etl extract` end to end into a fresh database (a child process,
 *               cursor commits included), with its peak RSS (VmHWM);
 *   (steps 2 and 3 at each page size, 1,000 and 100 by default, each beside its own limit)
 *   4. transform and export on the result, and one typed scan of raw.events for scale;
 *   5. large pages: 30 legal pages of 20 MB and one of 100 MB (1,000 events each: 20 KB and
 *      100 KB events) extracted, each case with its peak RSS (target < 512 MiB);
 *   6. nightly: a `run` over a history of N events, then a night of 1 % more (with late
 *      statuses of old patients): each stage of that night's `run`, against the first run
 *      and a `transform --full-refresh` of the same history (docs/incremental.md);
 * then prints events/s, MB/s, peak RSS and the ratios, and writes the figures to
 * bench/results/<date>.json. How to read them: docs/performance.md.
 *
 * Steps 1–3 are timed BENCH_REPEAT times (default 3 up to 1M events, else 1), interleaved, and
 * their medians reported; the peak RSS is the highest of the extract's samples.
 *
 * Environment: BENCH_EVENTS (default 1,000,000; up to 10,000,000), BENCH_PAGE_SIZES
 * (`1000,100`), BENCH_LARGE (the cases of step 5, `<pages>x<bytes>` comma-separated; default
 * `30x20000000,1x100000000`; `0` skips it), BENCH_LARGE_PAGE_SIZE (events per large page, 1000),
 * BENCH_BASELINE (another build's dist/cli.js, extracted beside this one: an A/B in one run),
 * BENCH_BATCH_PAGES (the job's default), BENCH_REPEAT,
 * BENCH_NODE_OPTIONS and BENCH_MALLOC_ARENA_MAX (the extract's NODE_OPTIONS, MALLOC_ARENA_MAX),
 * BENCH_TRACE=1 prints each child's RSS over time, BENCH_KEEP=1 keeps the work folder,
 * BENCH_SCENARIOS (`ingest,nightly`: steps 1–5, step 6; `large`: step 5 alone), BENCH_NIGHT_SHARE (0.01), BENCH_WORK
 * (the folder the warehouses are written in; default bench/.work), BENCH_TAG (a suffix of the
 * results' file names, e.g. `xfs`: a second run on the same day keeps the first one's file).
 *
 * @module
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { HttpClient } from '../src/upstream/http.js';
import { TokenProvider } from '../src/upstream/auth.js';
import { EventsClient, firstPageUrl, pageStream } from '../src/upstream/events.js';
import { Warehouse, sqlString } from '../src/warehouse/Warehouse.js';
import { publishedCopyPath } from '../src/warehouse/publishCopy.js';
import { DEFAULT_EVENT_TYPES } from '../src/config/config.js';
import { startMockApi } from '../packages/mock-api/src/index.js';

const N = Number(process.env['BENCH_EVENTS'] ?? 1_000_000);
/** Page sizes measured (BENCH_PAGE_SIZES, comma-separated; the first one feeds step 4). */
const PAGES = (process.env['BENCH_PAGE_SIZES'] ?? '1000,100').split(',').map(Number);
/** The large-page cases (BENCH_LARGE): pages × bytes a page; `0` or empty: none. */
const LARGE_CASES = (process.env['BENCH_LARGE'] ?? '30x20000000,1x100000000')
  .split(',')
  .map((c) => c.trim().split('x').map(Number))
  .filter(([pages, bytes]) => Number.isSafeInteger(pages) && pages! > 0 && Number.isSafeInteger(bytes) && bytes! > 0)
  .map(([pages, bytes]) => ({ pages: pages!, pageBytes: bytes! }));
/** Events per large page (BENCH_LARGE_PAGE_SIZE): 1,000 makes 20 MB pages of 20 KB events. */
const LARGE_PAGE_SIZE = Number(process.env['BENCH_LARGE_PAGE_SIZE'] ?? 1000);
/** BENCH_BASELINE: the `dist/cli.js` of another build, whose extract is timed beside this one's (an A/B in one run). */
const BASELINE = process.env['BENCH_BASELINE'];
const BATCH = process.env['BENCH_BATCH_PAGES'];
/** Samples of steps 1–3 (default 3 up to 1M events, 1 above: a 5M run already takes minutes). */
const REPEAT = Math.max(1, Math.trunc(Number(process.env['BENCH_REPEAT'] ?? (N <= 1_000_000 ? 3 : 1))) || 1);

/** The sample with the median `ms` (the upper one of two middles). */
function median<T extends { ms: number }>(samples: readonly T[]): T {
  const sorted = [...samples].sort((a, b) => a.ms - b.ms);
  return sorted[Math.floor(sorted.length / 2)]!;
}
const CLI = join(PACKAGE_ROOT, 'dist', 'cli.js');
/** `-<BENCH_TAG>` (letters, digits, `.`, `_`, `-`), appended to the results' file names; empty without it. */
const TAG = ((t) => (t === '' ? '' : `-${t}`))((process.env['BENCH_TAG'] ?? '').replace(/[^A-Za-z0-9._-]/g, ''));
/** The work folder (BENCH_WORK; default bench/.work): put it on another file system to compare (a published copy is a clone where the file system can clone). */
const WORK = process.env['BENCH_WORK'] ? join(process.env['BENCH_WORK'], 'recruit-etl-bench') : join(PACKAGE_ROOT, 'bench', '.work');

interface Sim {
  proc: ChildProcess;
  baseUrl: string;
  authUrl: string;
  clientId: string;
  audience: string;
  trialIds: string[];
  startMs: number;
}

async function startSimulator(events: number, faults: readonly string[] = []): Promise<Sim> {
  const t0 = performance.now();
  const proc = spawn(
    process.execPath,
    [CLI, 'mock-api', '--port', '0', '--synthetic-events', String(events), '--log-level', 'warn', ...faults.flatMap((f) => ['--fault', f])],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let buf = '';
  for await (const chunk of proc.stdout!) {
    buf += String(chunk);
    const nl = buf.indexOf('\n');
    if (nl >= 0) {
      const o = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      return {
        proc,
        baseUrl: String(o['baseUrl']),
        authUrl: String(o['authUrl']),
        clientId: String(o['clientId']),
        audience: String(o['audience']),
        trialIds: o['trialIds'] as string[],
        startMs: performance.now() - t0,
      };
    }
  }
  throw new Error('the simulator exited before listening');
}

function clientFor(sim: Sim): { http: HttpClient; events: EventsClient } {
  const http = new HttpClient({});
  const tokens = new TokenProvider({
    credentials: { authUrl: sim.authUrl, clientId: sim.clientId, clientSecret: 'demo-client-secret', audience: sim.audience },
    http,
  });
  return { http, events: new EventsClient({ baseUrl: sim.baseUrl, http, tokens }) };
}

/** 2. Every page over HTTP through the job's own client, discarded (optionally written as NDJSON). */
async function drain(sim: Sim, page: number, ndjsonPath?: string): Promise<{ ms: number; events: number; bytes: number }> {
  const { http, events } = clientFor(sim);
  const out = ndjsonPath ? createWriteStream(ndjsonPath) : undefined;
  const t0 = performance.now();
  let n = 0;
  let bytes = 0;
  const start = firstPageUrl(sim.baseUrl, { trialIds: sim.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES], limit: page });
  for await (const page of pageStream(events, start, { label: 'bench' })) {
    n += page.events.count;
    bytes += page.bytes;
    if (out) {
      const lines = page.events.all(page.events.envelope).join('\n');
      if (lines.length > 0 && !out.write(`${lines}\n`)) await once(out, 'drain');
    }
  }
  const ms = performance.now() - t0;
  if (out) {
    out.end();
    await once(out, 'finish');
  }
  await http.close();
  return { ms, events: n, bytes };
}

/** 1. DuckDB's own rate: NDJSON file → the columns of raw.events in a fresh database file. */
async function limit(ndjson: string, db: string): Promise<{ ms: number; rows: number }> {
  const wh = await Warehouse.open(db);
  try {
    await wh.migrate();
    const t0 = performance.now();
    await wh.run(`
      insert into raw.events
      select 'bench', row_number() over (), json->>'id', coalesce(json->>'eventType', json->>'name'),
             try_cast(json->>'publishedTime' as timestamptz), json->'message', json, 'bench', now()
      from read_ndjson_objects(${sqlString(ndjson)})`);
    await wh.checkpoint();
    const ms = performance.now() - t0;
    const r = await wh.one<{ n: bigint }>('select count(*) as n from raw.events');
    return { ms, rows: Number(r?.n ?? 0n) };
  } finally {
    await wh.close();
  }
}

/**
 * Before each timed step: write back the dirty pages the previous step left (hundreds of MB
 * of NDJSON and database files), so that no step pays for another's disk writes.
 */
function settle(): void {
  spawnSync('sync', { stdio: 'ignore' });
}

/** A log line (pino JSON on stdout) at warn level or above. */
const WARN_OR_WORSE = /"level":(?:[4-9]\d|\d{3,})\b/;

/**
 * Run the CLI as a child process, started as the installed `recruit-etl` bin is (through its
 * shebang, with its V8 flag; see src/cli.ts); returns wall time, peak RSS (VmHWM) in bytes and
 * the number of its log lines at warn level or above (a clean run has none: issue 16).
 */
async function cli(
  args: string[],
  env: Record<string, string>,
  bin = CLI,
): Promise<{ ms: number; peakRssBytes: number; warnings: number; stderr: string }> {
  const t0 = performance.now();
  const proc = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let warnings = 0;
  let partial = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  proc.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    warnings += lines.filter((l) => WARN_OR_WORSE.test(l)).length;
  });
  let peak = 0;
  const timeline: number[] = [];
  const poll = setInterval(() => {
    try {
      const st = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      const r = /VmRSS:\s+(\d+) kB/.exec(st);
      if (r && process.env['BENCH_TRACE']) timeline.push(Math.round(Number(r[1]) / 1024));
      const m = /VmHWM:\s+(\d+) kB/.exec(st);
      if (m) peak = Math.max(peak, Number(m[1]) * 1024);
    } catch {
      // the process has exited
    }
  }, 25);
  const [code] = (await once(proc, 'close')) as [number | null];
  clearInterval(poll);
  if (WARN_OR_WORSE.test(partial)) warnings += 1;
  const ms = performance.now() - t0;
  if (timeline.length)
    console.log(args[0], 'RSS MiB timeline', timeline.filter((_, i) => i % Math.ceil(timeline.length / 40) === 0).join(' '));
  if (code !== 0) throw new Error(`recruit-etl ${args.join(' ')} exited ${code}: ${stderr.trim()}`);
  return { ms, peakRssBytes: peak, warnings, stderr };
}

/**
 * 4c. One typed scan of raw.events for scale: every row read once, its envelope parsed and
 * the fields the models use extracted and cast (ids, type, status, domain timestamps, date).
 * The transform must do at least this much work once; the target is ≤ 3× of it.
 */
async function typedScan(db: string): Promise<number> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    const t0 = performance.now();
    await wh.all(`
      select count(*), count(distinct event_id), count(distinct event_type), max(published_time),
             count(distinct message->>'referralSubjectId'), count(distinct message->>'trialId'),
             count(distinct message->>'siteId'), count(distinct message->>'patientStatus'),
             max(try_cast(coalesce(message->>'createdTime', message->>'statusChangedTime', message->>'referralAcknowledgedTime') as timestamptz)),
             max(try_cast(message->>'contactAttemptDate' as date))
      from raw.events`);
    return performance.now() - t0;
  } finally {
    await wh.close();
  }
}

const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

/** Environment of the CLI against `sim` writing `db`, at page size `page`. */
function envFor(sim: Sim, db: string, page: number): Record<string, string> {
  return {
    RECRUIT_ETL_DB: db,
    RECRUIT_ETL_BASE_URL: sim.baseUrl,
    RECRUIT_ETL_AUTH_URL: sim.authUrl,
    RECRUIT_ETL_CLIENT_ID: sim.clientId,
    RECRUIT_ETL_CLIENT_SECRET: 'demo-client-secret',
    RECRUIT_ETL_AUDIENCE: sim.audience,
    RECRUIT_ETL_TRIAL_ID: sim.trialIds.join(','),
    RECRUIT_ETL_PAGE_SIZE: String(page),
    RECRUIT_ETL_EXPORT_DIR: join(WORK, 'exports'),
    RECRUIT_ETL_LOG_LEVEL: 'warn',
    ...(BATCH ? { RECRUIT_ETL_BATCH_PAGES: BATCH } : {}),
    ...(process.env['BENCH_MALLOC_ARENA_MAX'] ? { MALLOC_ARENA_MAX: process.env['BENCH_MALLOC_ARENA_MAX'] } : {}),
    ...(process.env['BENCH_NODE_OPTIONS'] ? { NODE_OPTIONS: process.env['BENCH_NODE_OPTIONS'] } : {}),
  };
}

interface PageSizeFigures {
  pageSize: number;
  limits: { ms: number; rows: number }[];
  drains: { ms: number; events: number; bytes: number }[];
  /** Each extract's wall time, peak RSS and log lines at warn level or above. */
  extracts: { ms: number; peakRssBytes: number; warnings: number }[];
  /** The extract of BENCH_BASELINE, beside each of this build's (none without it). */
  baselines: { ms: number; peakRssBytes: number }[];
  /** Medians (ms) and the highest peak RSS. */
  limitMs: number;
  drainMs: number;
  extractMs: number;
  peakRssBytes: number;
  bytes: number;
  events: number;
}

/** Steps 1–3 at one page size, REPEAT times interleaved; the extract's database is left in `db`. */
async function measure(sim: Sim, ndjson: string, db: string, page: number): Promise<PageSizeFigures> {
  const limits: { ms: number; rows: number }[] = [];
  const drains: { ms: number; events: number; bytes: number }[] = [];
  const extracts: { ms: number; peakRssBytes: number; warnings: number }[] = [];
  const baselines: { ms: number; peakRssBytes: number }[] = [];
  for (let k = 0; k < REPEAT; k += 1) {
    const limitDb = join(WORK, 'limit.duckdb');
    rmSync(limitDb, { force: true });
    settle();
    limits.push(await limit(ndjson, limitDb));
    settle();
    drains.push(await drain(sim, page));
    for (const f of [db, `${db}.wal`, publishedCopyPath(db)]) rmSync(f, { force: true });
    settle();
    const { ms, peakRssBytes, warnings } = await cli(['extract'], envFor(sim, db, page));
    extracts.push({ ms, peakRssBytes, warnings });
    if (BASELINE) {
      const other = join(WORK, 'baseline.duckdb');
      for (const f of [other, `${other}.wal`, publishedCopyPath(other)]) rmSync(f, { force: true });
      settle();
      baselines.push(await cli(['extract'], envFor(sim, other, page), BASELINE));
    }
  }
  const dr = median(drains);
  return {
    pageSize: page,
    limits,
    drains,
    extracts,
    baselines,
    limitMs: median(limits).ms,
    drainMs: dr.ms,
    extractMs: median(extracts).ms,
    peakRssBytes: Math.max(...extracts.map((e) => e.peakRssBytes)),
    bytes: dr.bytes,
    events: dr.events,
  };
}

/** What one large-page case measured. */
interface LargeFigures {
  pages: number;
  pageBytes: number;
  eventsPerPage: number;
  ms: number;
  peakRssBytes: number;
}

/**
 * 5. Legal but large pages: `pages` pages of LARGE_PAGE_SIZE events padded to `pageBytes`
 * each (the simulator's `padEvents` fault), extracted once into a fresh database; the peak RSS
 * must stay under 512 MiB.
 */
async function largePages(pages: number, pageBytes: number): Promise<LargeFigures> {
  const sim = await startSimulator(pages * LARGE_PAGE_SIZE, [`events:padEvents=${pageBytes}:times=${pages * 10}`]);
  try {
    const db = join(WORK, `large-${pages}x${pageBytes}.duckdb`);
    settle();
    const r = await cli(['extract'], envFor(sim, db, LARGE_PAGE_SIZE));
    for (const f of [db, `${db}.wal`, publishedCopyPath(db)]) rmSync(f, { force: true });
    return { pages, pageBytes, eventsPerPage: LARGE_PAGE_SIZE, ms: r.ms, peakRssBytes: r.peakRssBytes };
  } finally {
    sim.proc.kill('SIGTERM');
  }
}

/** Step 5, every case of BENCH_LARGE in turn. */
async function allLargePages(): Promise<LargeFigures[]> {
  const out: LargeFigures[] = [];
  for (const c of LARGE_CASES) out.push(await largePages(c.pages, c.pageBytes));
  return out;
}

/** The lines of step 5. */
function printLarge(large: readonly LargeFigures[]): void {
  for (const l of large) {
    console.log(
      `large pages: ${l.pages} page${l.pages === 1 ? '' : 's'} of ${fmt(l.pageBytes / 1e6)} MB (${fmt(l.eventsPerPage)} events of ${fmt(l.pageBytes / l.eventsPerPage / 1e3)} KB) extracted in ${fmt(l.ms / 1000, 2)} s, peak RSS ${fmt(l.peakRssBytes / 1048576)} MiB (target < 512)`,
    );
  }
}

/** Scenarios to run (BENCH_SCENARIOS): `ingest` (steps 1–5), `nightly` (step 6), `large` (step 5 alone). */
const SCENARIOS = new Set((process.env['BENCH_SCENARIOS'] ?? 'ingest,nightly').split(',').map((x) => x.trim()));
/** The night's new events as a share of the history (BENCH_NIGHT_SHARE). */
const NIGHT_SHARE = Number(process.env['BENCH_NIGHT_SHARE'] ?? 0.01);

/** One `run` as recorded in etl.runs: wall time and the stage times it recorded. */
interface RunFigures {
  ms: number;
  stageMs: Record<string, number>;
  mode?: string;
  newDeliveries?: number;
}

async function lastRun(db: string): Promise<{ stageMs: Record<string, number>; mode?: string; newDeliveries?: number }> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    const row = await wh.one<{ summary: string }>(`select summary::varchar as summary from etl.runs order by started_at desc limit 1`);
    const sum = JSON.parse(row?.summary ?? '{}') as {
      stageMs?: Record<string, number>;
      transform?: { mode?: string; newDeliveries?: number };
    };
    return {
      stageMs: sum.stageMs ?? {},
      ...(sum.transform?.mode ? { mode: sum.transform.mode } : {}),
      ...(sum.transform?.newDeliveries !== undefined ? { newDeliveries: sum.transform.newDeliveries } : {}),
    };
  } finally {
    await wh.close();
  }
}

/**
 * 6. The nightly scenario: a first `run` over N events (the history), then a night of
 * N × BENCH_NIGHT_SHARE more released by the simulator (its tail carries late statuses of old
 * patients) and a second `run`; then `transform --full-refresh` of the same data. The night's
 * transform and run are compared with the full-refresh transform and the first run.
 */
async function nightly(): Promise<Record<string, unknown>> {
  const night = Math.max(1, Math.round(N * NIGHT_SHARE));
  const api = await startMockApi({ syntheticEvents: N + night, syntheticLateTail: night, releaseFraction: N / (N + night) });
  const db = join(WORK, 'nightly.duckdb');
  try {
    const sim: Sim = {
      proc: undefined as unknown as ChildProcess,
      baseUrl: api.baseUrl,
      authUrl: api.authUrl,
      clientId: api.options.clientId,
      audience: api.options.audience,
      trialIds: [...api.truth.trialIds],
      startMs: 0,
    };
    const env = envFor(sim, db, PAGES[0] ?? 1000);
    const measureRun = async (args: string[]): Promise<RunFigures> => {
      settle();
      const r = await cli(args, env);
      return { ms: r.ms, ...(await lastRun(db)) };
    };
    console.log(`bench nightly: history of ${fmt(N)} events, a night of ${fmt(night)}`);
    const first = await measureRun(['run']);
    api.grow(night);
    const second = await measureRun(['run']);
    const full = await measureRun(['transform', '--full-refresh']);
    const scanMs = await typedScan(db);
    const stages = ['extract', 'transform', 'export', 'report'];
    const other = (r: RunFigures) => r.ms - stages.reduce((a, k) => a + (r.stageMs[k] ?? 0), 0);
    console.log('');
    console.log(`${'nightly'.padEnd(40)} ${'first run'.padStart(10)} ${'night run'.padStart(10)} ${'ratio'.padStart(7)}`);
    for (const k of stages) {
      const a = first.stageMs[k] ?? 0;
      const b = second.stageMs[k] ?? 0;
      console.log(`${k.padEnd(40)} ${fmt(a / 1000, 2).padStart(10)} ${fmt(b / 1000, 2).padStart(10)} ${fmt(b / a, 3).padStart(7)}`);
    }
    console.log(
      `${'start, checkpoint, published copy'.padEnd(40)} ${fmt(other(first) / 1000, 2).padStart(10)} ${fmt(other(second) / 1000, 2).padStart(10)} ${fmt(other(second) / other(first), 3).padStart(7)}`,
    );
    console.log(
      `${'whole run'.padEnd(40)} ${fmt(first.ms / 1000, 2).padStart(10)} ${fmt(second.ms / 1000, 2).padStart(10)} ${fmt(second.ms / first.ms, 3).padStart(7)}   (target ≤ 0.15)`,
    );
    const fullMs = full.stageMs['transform'] ?? full.ms;
    const nightTr = second.stageMs['transform'] ?? 0;
    console.log(
      `night transform (${second.mode}, ${fmt(second.newDeliveries ?? 0)} new rows) / full-refresh transform ${fmt(fullMs / 1000, 2)} s: ${fmt(nightTr / fullMs, 3)}   (target ≤ 0.1)`,
    );
    console.log(`full-refresh transform / typed scan of raw.events (${fmt(scanMs / 1000, 2)} s): ${fmt(fullMs / scanMs, 2)}×`);
    return {
      historyEvents: N,
      nightEvents: night,
      firstRun: first,
      nightRun: second,
      fullRefreshTransform: full,
      typedScanMs: scanMs,
      nightTransformVsFullRefresh: nightTr / fullMs,
      nightRunVsFirstRun: second.ms / first.ms,
    };
  } finally {
    await api.close();
  }
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `make build`');
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true, mode: 0o700 });
  if (SCENARIOS.has('nightly')) {
    const figures = await nightly();
    const resultsDir = join(PACKAGE_ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${new Date().toISOString().slice(0, 10)}-nightly${N === 1_000_000 ? '' : `-${N}`}${TAG}.json`);
    writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), node: process.version, ...figures }, null, 2)}\n`);
    console.log(`\nbench: nightly figures written to ${file}`);
  }
  if (SCENARIOS.has('large') && !SCENARIOS.has('ingest')) {
    const large = await allLargePages();
    console.log('');
    printLarge(large);
    const resultsDir = join(PACKAGE_ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${new Date().toISOString().slice(0, 10)}-large${TAG}.json`);
    writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), node: process.version, largePages: large }, null, 2)}\n`);
    console.log(`\nbench: large-page figures written to ${file}`);
  }
  if (!SCENARIOS.has('ingest')) {
    if (process.env['BENCH_KEEP'] !== '1') rmSync(WORK, { recursive: true, force: true });
    return;
  }
  console.log(`bench: ${fmt(N)} events, page sizes ${PAGES.join(', ')}`);
  const sim = await startSimulator(N);
  try {
    console.log(`bench: simulator ready in ${fmt(sim.startMs / 1000, 1)} s`);
    const ndjson = join(WORK, 'events.ndjson');
    await drain(sim, 1000, ndjson); // untimed: the same events as NDJSON for the limit
    const ndjsonBytes = statSync(ndjson).size;
    // The limit, the drain and the extract are timed REPEAT times each, interleaved (limit,
    // drain, extract, limit, …), and the medians are reported: on a shared 2-core machine one
    // sample of either moves by ±10 %. The limit is measured beside each page size, so that
    // each ratio comes from one stretch of the run.
    const db = join(WORK, 'extract.duckdb');
    const figures: PageSizeFigures[] = [];
    // The last page size measured leaves its database for step 4: the first one, 1000.
    for (const page of [...PAGES].reverse()) figures.unshift(await measure(sim, ndjson, db, page));
    rmSync(ndjson, { force: true });
    const env = envFor(sim, db, PAGES[0]!);
    settle();
    const tr = await cli(['transform'], env);
    settle();
    const exp = await cli(['export'], env);
    settle();
    const scanMs = await typedScan(db);
    const wh = await Warehouse.open(db, { readOnly: true });
    const loaded = Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))?.n ?? 0n);
    await wh.close();
    for (const f of figures) {
      if (loaded !== f.events || f.limits.some((l) => l.rows !== f.events)) {
        throw new Error(
          `row counts differ at page size ${f.pageSize}: served ${f.events}, limit ${f.limits.map((l) => l.rows).join('/')}, extract ${loaded}`,
        );
      }
    }
    const large = await allLargePages();
    console.log('');
    console.log(`${'step'.padEnd(34)} ${'seconds'.padStart(8)} ${'events/s'.padStart(11)} ${'MB/s'.padStart(7)}`);
    const line = (name: string, ms: number, n: number, size: number) => {
      const sec = ms / 1000;
      console.log(
        `${name.padEnd(34)} ${fmt(sec, 2).padStart(8)} ${fmt(n / sec).padStart(11)} ${(Number.isNaN(size) ? '-' : fmt(size / sec, 1)).padStart(7)}`,
      );
    };
    const list = (xs: readonly { ms: number }[]) => xs.map((x) => fmt(x.ms / 1000, 2)).join(' / ');
    for (const f of figures) {
      line(`1 limit (DuckDB NDJSON load)`, f.limitMs, f.events, ndjsonBytes / 1e6);
      line(`2 HTTP drain, page size ${f.pageSize}`, f.drainMs, f.events, f.bytes / 1e6);
      line(`3 extract, page size ${f.pageSize}`, f.extractMs, f.events, f.bytes / 1e6);
      if (REPEAT > 1)
        console.log(`  (medians of ${REPEAT}: limit ${list(f.limits)} s; drain ${list(f.drains)} s; extract ${list(f.extracts)} s)`);
      const warned = f.extracts.reduce((a, e) => a + e.warnings, 0);
      console.log(
        `  extract / limit: ${fmt(f.limitMs / f.extractMs, 2)}×   peak RSS ${fmt(f.peakRssBytes / 1048576)} MiB   warnings logged: ${warned} (target 0)`,
      );
      if (f.baselines.length > 0) {
        const b = median(f.baselines);
        console.log(
          `  baseline extract: ${list(f.baselines)} s, / limit ${fmt(f.limitMs / b.ms, 2)}×, peak RSS ${fmt(Math.max(...f.baselines.map((x) => x.peakRssBytes)) / 1048576)} MiB`,
        );
      }
    }
    line('4a transform', tr.ms, loaded, NaN);
    line('4b export', exp.ms, loaded, NaN);
    line('4c typed scan of raw.events', scanMs, loaded, NaN);
    console.log(`(transform + export) / typed scan: ${fmt((tr.ms + exp.ms) / scanMs, 1)}×`);
    printLarge(large);
    const date = new Date().toISOString().slice(0, 10);
    const resultsDir = join(PACKAGE_ROOT, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${date}${N === 1_000_000 ? '' : `-${N}`}${TAG}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          events: N,
          batchPages: BATCH ? Number(BATCH) : 'default',
          repeat: REPEAT,
          node: process.version,
          ndjsonBytes,
          pageSizes: figures.map((f) => ({
            pageSize: f.pageSize,
            seconds: { limit: f.limitMs / 1000, drain: f.drainMs / 1000, extract: f.extractMs / 1000 },
            samples: {
              limit: f.limits.map((x) => x.ms / 1000),
              drain: f.drains.map((x) => x.ms / 1000),
              extract: f.extracts.map((x) => x.ms / 1000),
              extractPeakRssBytes: f.extracts.map((x) => x.peakRssBytes),
              ...(f.baselines.length > 0
                ? { baselineExtract: f.baselines.map((x) => x.ms / 1000), baselinePeakRssBytes: f.baselines.map((x) => x.peakRssBytes) }
                : {}),
            },
            bytesServed: f.bytes,
            extractPeakRssBytes: f.peakRssBytes,
            extractVsLimit: f.limitMs / f.extractMs,
          })),
          seconds: { transform: tr.ms / 1000, export: exp.ms / 1000, typedScan: scanMs / 1000 },
          transformExportVsScan: (tr.ms + exp.ms) / scanMs,
          largePages: large,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`\nbench: figures written to ${file}`);
  } finally {
    sim.proc.kill('SIGTERM');
    if (process.env['BENCH_KEEP'] !== '1') rmSync(WORK, { recursive: true, force: true });
  }
}

await main();
