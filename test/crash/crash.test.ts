/**
 * The crash suite of docs/contracts.md guarantee 2: "a run killed at any instant (SIGKILL) and run
 * again ends with the same raw.events as an uninterrupted run".
 *
 * The built CLI (`dist/cli.js`) runs as a child process against the in-process simulator.
 * It is killed at ≥ 100 distinct, deterministic instants: every named failpoint of
 * src/failpoints.ts at several occurrence numbers (the CLI SIGKILLs itself), plus `kill -9`
 * from outside after a spread of delays covering the instants between failpoints. After
 * each kill, the state left must be a prefix of the uninterrupted run (guarantee 1), and
 * one more `run` to completion must end with raw.events equal to the uninterrupted run's
 * row for row, the same cursor, readable exports matching their manifest, no `.tmp`
 * leftovers, no previous copy kept aside, and a published read-only copy that calls no run
 * succeeded which the live etl.runs does not. At every kill the run row agrees with the
 * ending: a killed run's row is `running` (never `succeeded`), an exit 0's is `succeeded`.
 * A last case kills one database ten times in a row before completing it.
 *
 * Iterations run two at a time (two cores), each in its own temporary folder; the
 * simulator is shared (static data: grow() is never called).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { readSeries } from '../../src/metrics/metricsFile.js';
import { join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { expectedEvents } from '../../packages/mock-api/src/index.js';
import { DEFAULT_EVENT_TYPES } from '../../src/config/config.js';
import type { FailpointName } from '../../src/failpoints.js';
import { publishedCopyPath } from '../../src/warehouse/publishCopy.js';
import { logLines, runCli, type CliResult } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';
import {
  checkExports,
  diffRawEvents,
  mapPool,
  prefixProblem,
  rawEventCount,
  rawEventsIfAny,
  runCliKilledAfter,
  runRowProblem,
  runStatusesSince,
  seededRandom,
  snapshotDb,
  streamShapeProblems,
  tmpLeftovers,
  withReadOnly,
  type DbSnapshot,
  type ManifestFile,
  type RawEventRow,
} from '../helpers/crash.js';

const PAGE_SIZE = 50;
const CONCURRENCY = 2;
/** ~500 events: 11 pages of 50, one page per batch (one commit per page). */
const SIM = { seed: 17, patientsPerTrial: 42 } as const;
/** Timer kills during start-up (process, DuckDB open, migrations), measured from spawn. */
const STARTUP_KILLS = 10;
/** Timer kills measured from the "run started" log line, spread to the end of the run. */
const RUN_KILLS = 40;
const RUN_STARTED = '"msg":"run started"';
const LOOP_KILLS = 10;
/** Loop timer kills land within this many ms after "run started" (a run with nothing left to extract still lasts longer). */
const LOOP_TIMER_MAX_MS = 600;
const ITERATION_TIMEOUT_MS = 60_000;

type Instant =
  | { kind: 'failpoint'; name: FailpointName; n: number; label: string }
  | { kind: 'timer'; delayMs: number; startOn?: string; label: string };

/** What one kill did (for the summary and the per-failpoint counts). */
interface KillOutcome {
  label: string;
  family: string;
  died: boolean;
  exitCode: number | null;
  elapsedMs: number;
  rowsAtKill: number;
  /** Last log message the killed process wrote (where the kill landed). */
  lastLog: string;
}

const EXTRACT_POINTS: FailpointName[] = ['extract.before-append', 'extract.mid-append', 'extract.before-commit', 'extract.after-commit'];

interface Reference {
  events: RawEventRow[];
  snapshot: DbSnapshot;
  manifest: ManifestFile;
  pages: number;
  /** Wall time of an uninterrupted run (the slower of two run side by side, like the iterations). */
  durationMs: number;
  /** From spawn to the "run started" log line. */
  startupMs: number;
  /** From spawn to the "run finished" log line (after the publish). */
  finishedMs: number;
}

describe('crash safety: SIGKILL at any instant, then a run to completion (guarantee 2)', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  let ref: Reference;
  let refRun: CliResult;
  const outcomes: KillOutcome[] = [];
  const suiteStarted = Date.now();

  const envIn = (dir: string, extra: Record<string, string> = {}): Record<string, string> =>
    envFor(api, join(dir, 'warehouse.duckdb'), {
      RECRUIT_ETL_EXPORT_DIR: join(dir, 'exports'),
      RECRUIT_ETL_PAGE_SIZE: String(PAGE_SIZE),
      RECRUIT_ETL_BATCH_PAGES: '1',
      RECRUIT_ETL_LOG_LEVEL: 'warn',
      // Written before the run row says succeeded (failpoints run.before-metrics / run.before-succeeded).
      RECRUIT_ETL_METRICS_FILE: join(dir, 'metrics', 'recruit_etl.prom'),
      ...extra,
    });

  let folders = 0;
  const freshFolder = (label: string): string => {
    const dir = join(tmp.dir, `${String(folders++).padStart(3, '0')}-${label.replace(/[^a-z0-9]+/gi, '_')}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  };

  /** Rows an uninterrupted run has committed after `batches` batches of one page. */
  const rowsAfterBatches = (batches: number): number => Math.min(Math.max(batches, 0) * PAGE_SIZE, ref.events.length);

  let twin: DbSnapshot;
  beforeAll(async () => {
    api = await startSim(SIM);
    tmp = tempDir('recruit-etl-crash-');
    // Two uninterrupted runs side by side: the reference, a twin that must equal it, and
    // the timing of a run under the same load as the iterations (two at a time).
    const dirs = [freshFolder('reference'), freshFolder('twin')];
    const timed = await Promise.all(
      dirs.map(async (dir) => {
        const t0 = Date.now();
        const r = await runCli(['run'], envIn(dir, { RECRUIT_ETL_LOG_LEVEL: 'info' }));
        const logs = logLines(r.stdout);
        const at = (msg: string): number => Date.parse(String(logs.find((l) => l['msg'] === msg)?.['time'])) - t0;
        return { r, durationMs: Date.now() - t0, startupMs: at('run started'), finishedMs: at('run finished') };
      }),
    );
    for (const t of timed) if (t.r.code !== 0) throw new Error(`uninterrupted run failed (${t.r.code}): ${t.r.stderr}`);
    refRun = timed[0]!.r;
    const snapshot = await snapshotDb(join(dirs[0]!, 'warehouse.duckdb'));
    twin = await snapshotDb(join(dirs[1]!, 'warehouse.duckdb'));
    const finished = logLines(refRun.stdout).find((l) => l['msg'] === 'run finished');
    const { manifest } = await checkExports(join(dirs[0]!, 'exports'));
    ref = {
      events: snapshot.events,
      snapshot,
      manifest,
      pages: Number(finished?.['pagesFetched'] ?? 0),
      durationMs: Math.max(...timed.map((t) => t.durationMs)),
      startupMs: Math.max(...timed.map((t) => (Number.isFinite(t.startupMs) ? t.startupMs : 0))),
      finishedMs: Math.max(...timed.map((t) => (Number.isFinite(t.finishedMs) ? t.finishedMs : 0))),
    };
  }, 120_000);

  afterAll(async () => {
    await api?.close();
    tmp?.cleanup();
    const families = [...new Set(outcomes.map((o) => o.family))];
    const lines = families.map((f) => {
      const os = outcomes.filter((o) => o.family === f);
      return `  ${f.padEnd(24)} ${String(os.filter((o) => o.died).length).padStart(3)} killed mid-run / ${os.length} instants`;
    });
    const timerStages = new Map<string, number>();
    for (const o of outcomes.filter((x) => x.family === 'kill -9 (timer)' && x.died))
      timerStages.set(o.lastLog, (timerStages.get(o.lastLog) ?? 0) + 1);
    console.log(
      [
        `crash suite: ${outcomes.length} kills (${outcomes.filter((o) => o.died).length} really died), wall ${((Date.now() - suiteStarted) / 1000).toFixed(1)} s`,
        `reference: ${ref?.events.length} events, ${ref?.pages} pages, ${ref?.manifest.files.length} export files, ${ref?.durationMs} ms (run started after ${ref?.startupMs} ms, finished after ${ref?.finishedMs} ms)`,
        ...lines,
        '  timer kills by last log line before death:',
        ...[...timerStages].map(([k, v]) => `    ${String(v).padStart(3)}  ${k}`),
      ].join('\n'),
    );
  });

  /** Every check on a database folder after a run to completion; returns the problems found. */
  async function verifyCompleted(dir: string): Promise<string[]> {
    const problems: string[] = [];
    const db = join(dir, 'warehouse.duckdb');
    const exportDir = join(dir, 'exports');
    const snap = await snapshotDb(db);
    const diff = diffRawEvents(snap.events, ref.events);
    if (diff) problems.push(`raw.events differs from the uninterrupted run: ${diff}`);
    problems.push(...streamShapeProblems(snap.events).map((p) => `raw.events: ${p}`));
    if (JSON.stringify(snap.streamIds) !== JSON.stringify(ref.snapshot.streamIds))
      problems.push(`raw.events streams ${JSON.stringify(snap.streamIds)}, expected ${JSON.stringify(ref.snapshot.streamIds)}`);
    const cursor = (s: DbSnapshot): string => JSON.stringify(s.streams.map((r) => ({ ...r, event_count: String(r.event_count) })));
    if (cursor(snap) !== cursor(ref.snapshot)) problems.push(`etl.streams ${cursor(snap)}, expected ${cursor(ref.snapshot)}`);
    // A killed run cannot record its end: the next run marks it 'abandoned', never leaves it 'running'.
    const badRuns = snap.runs.filter((r) => r.status === 'failed' || r.status === 'interrupted' || r.status === 'running');
    if (badRuns.length > 0) problems.push(`etl.runs has ${JSON.stringify(badRuns.map((r) => ({ ...r, n: String(r.n) })))}`);
    if (!snap.runs.some((r) => r.status === 'succeeded')) problems.push('etl.runs records no succeeded run');
    let exp: Awaited<ReturnType<typeof checkExports>> | undefined;
    try {
      exp = await checkExports(exportDir);
      problems.push(...exp.problems.map((p) => `exports: ${p}`));
      const models = exp.manifest.files.map((f) => f.model).sort();
      const refModels = ref.manifest.files.map((f) => f.model).sort();
      if (JSON.stringify(models) !== JSON.stringify(refModels))
        problems.push(`exported models ${JSON.stringify(models)}, expected ${JSON.stringify(refModels)}`);
      // Models built from raw.events alone must have the reference's row counts
      // (site snapshots accumulate one set per `sites` run, so their history may differ).
      for (const f of ref.manifest.files) {
        if (f.model.includes('site')) continue;
        const got = exp.rowsByFile[f.file];
        if (got !== f.rows) problems.push(`export ${f.file} has ${got} rows, the uninterrupted run's has ${f.rows}`);
      }
    } catch (err) {
      problems.push(`exports: ${(err as Error).message}`);
    }
    // Snapshots (docs/exports.md): current, at most the previous one, no folder of a killed export.
    try {
      const current = readlinkSync(join(exportDir, 'current'));
      const snaps = readdirSync(join(exportDir, 'snapshots'));
      if (!snaps.includes(current.replace(/^snapshots\//, '')) || snaps.length > 2)
        problems.push(`exports: current -> ${current}, snapshots ${JSON.stringify(snaps)}`);
      const named = (exp?.manifest as { snapshot?: string } | undefined)?.snapshot;
      if (named !== current) problems.push(`exports: manifest names snapshot ${named}, current is ${current}`);
    } catch (err) {
      problems.push(`exports: ${(err as Error).message}`);
    }
    const leftovers = [...tmpLeftovers(exportDir).map((f) => `exports/${f}`), ...tmpLeftovers(dir)];
    if (leftovers.length > 0) problems.push(`.tmp leftovers after the completing run: ${leftovers.join(', ')}`);
    const kept = readdirSync(dir).filter((f) => f.includes('.previous.'));
    if (kept.length > 0) problems.push(`previous copies kept aside after the completing run: ${kept.join(', ')}`);
    const copy = publishedCopyPath(db);
    if (!existsSync(copy)) problems.push('no published read-only copy');
    else {
      try {
        const n = await rawEventCount(copy);
        if (n !== ref.events.length) problems.push(`published copy holds ${n} raw.events rows, expected ${ref.events.length}`);
        // The copy never calls a run succeeded that the live file does not.
        const succeeded = (f: string): Promise<string[]> =>
          withReadOnly(f, async (wh) =>
            (await wh.all<{ run_id: string }>("select run_id from etl.runs where status = 'succeeded'")).map((x) => x.run_id),
          );
        const live = new Set(await succeeded(db));
        const claimed = (await succeeded(copy)).filter((id) => !live.has(id));
        if (claimed.length > 0) problems.push(`the published copy calls runs succeeded that etl.runs does not: ${claimed.join(', ')}`);
      } catch (err) {
        problems.push(`published copy does not open read-only: ${(err as Error).message}`);
      }
    }
    return problems;
  }

  /** Run `run` without faults to exit 0, then verify; throws with every problem found. */
  async function completeAndVerify(dir: string, label: string): Promise<void> {
    const done = await runCli(['run'], envIn(dir), { timeoutMs: ITERATION_TIMEOUT_MS });
    if (done.code !== 0 || done.signal !== null) {
      throw new Error(`${label}: the completing run ended with code ${done.code} signal ${done.signal}: ${done.stderr.trim()}`);
    }
    const problems = await verifyCompleted(dir);
    if (problems.length > 0) throw new Error(`${label}:\n    ${problems.join('\n    ')}`);
  }

  /** Kill a run at `inst` on the database in `dir`; returns what happened (throws on a wrong death). */
  async function kill(dir: string, inst: Instant): Promise<KillOutcome> {
    const db = join(dir, 'warehouse.duckdb');
    let r: CliResult & { elapsedMs?: number };
    const t0 = Date.now();
    if (inst.kind === 'failpoint') {
      r = await runCli(['run'], envIn(dir, { RECRUIT_ETL_LOG_LEVEL: 'info', RECRUIT_ETL_FAILPOINT: `${inst.name}:${inst.n}` }), {
        timeoutMs: ITERATION_TIMEOUT_MS,
      });
    } else {
      r = await runCliKilledAfter(['run'], envIn(dir, { RECRUIT_ETL_LOG_LEVEL: 'info' }), inst.delayMs, {
        timeoutMs: ITERATION_TIMEOUT_MS,
        ...(inst.startOn !== undefined ? { startOn: inst.startOn } : {}),
      });
    }
    const died = r.signal === 'SIGKILL';
    if (!died && r.code !== 0)
      throw new Error(
        `${inst.label}: the killed run neither died by SIGKILL nor finished: code ${r.code} signal ${r.signal}: ${r.stderr.trim()}`,
      );
    if (died && r.stderr.trim() !== '') throw new Error(`${inst.label}: the killed run wrote to stderr: ${r.stderr.trim()}`);
    const logs = logLines(r.stdout);
    const last = logs[logs.length - 1];
    // The run row is the truth (guarantee 2): it agrees with how the process ended.
    let rowProblem: string | undefined;
    try {
      const statuses = await runStatusesSince(db, t0);
      rowProblem = runRowProblem(statuses, died, r.code);
      if (rowProblem && died && statuses.length === 1 && statuses[0] === 'succeeded') {
        // Killed after it recorded its success (while closing): everything before it is done.
        const inCopy = existsSync(publishedCopyPath(db)) ? await runStatusesSince(publishedCopyPath(db), t0) : [];
        const metrics = join(dir, 'metrics', 'recruit_etl.prom');
        const exit = existsSync(metrics)
          ? readSeries(readFileSync(metrics, 'utf8'))
              .get('recruit_etl_last_exit_code')
              ?.find((x) => x.labels['command'] === 'run')?.value
          : undefined;
        rowProblem =
          inCopy.join() === 'succeeded' && exit === 0
            ? undefined
            : `${rowProblem}; the copy says ${JSON.stringify(inCopy)}, the metrics file exit ${exit}`;
      }
    } catch (err) {
      rowProblem = `etl.runs cannot be read after the kill: ${(err as Error).message}`;
    }
    if (rowProblem) throw new Error(`${inst.label}: ${rowProblem}`);
    let rows: RawEventRow[];
    try {
      rows = await rawEventsIfAny(db);
    } catch (err) {
      throw new Error(`${inst.label}: the database left by the kill does not open read-only: ${(err as Error).message}`);
    }
    // Guarantee 1 across a kill: what stays is exactly a prefix of the uninterrupted run.
    const prefix = prefixProblem(rows, ref.events);
    if (prefix) throw new Error(`${inst.label}: raw.events after the kill is not a prefix of the uninterrupted run: ${prefix}`);
    return {
      label: inst.label,
      family: inst.kind === 'failpoint' ? inst.name : 'kill -9 (timer)',
      died,
      exitCode: r.code,
      elapsedMs: r.elapsedMs ?? Date.now() - t0,
      rowsAtKill: rows.length,
      lastLog: typeof last?.['msg'] === 'string' ? `${last['msg']}${last['stage'] ? ` (${String(last['stage'])})` : ''}` : '(no log yet)',
    };
  }

  /** One instant on a fresh database: kill, check the state left, complete, verify. */
  async function crashIteration(inst: Instant, checkAtKill?: (dir: string, o: KillOutcome) => string | undefined): Promise<KillOutcome> {
    const dir = freshFolder(inst.label);
    const o = await kill(dir, inst);
    outcomes.push(o);
    const atKill = checkAtKill?.(dir, o);
    if (atKill) throw new Error(`${inst.label}: ${atKill}`);
    await completeAndVerify(dir, inst.label);
    return o;
  }

  /** Run instants two at a time; fail with the list of every instant that went wrong. */
  async function runInstants(
    instants: Instant[],
    checkAtKill?: (inst: Instant, dir: string, o: KillOutcome) => string | undefined,
  ): Promise<KillOutcome[]> {
    const results = await mapPool(instants, CONCURRENCY, (inst) =>
      crashIteration(inst, checkAtKill && ((dir, o) => checkAtKill(inst, dir, o))),
    );
    const failures = results.flatMap((r) => (r.ok ? [] : [r.error instanceof Error ? r.error.message : String(r.error)]));
    expect(failures, `${failures.length} of ${instants.length} kill instants failed`).toEqual([]);
    return results.flatMap((r) => (r.ok ? [r.value] : []));
  }

  /** Every extract failpoint on every page: first, second, …, middle, …, last. */
  const extractInstants = (): Instant[] =>
    EXTRACT_POINTS.flatMap((name) =>
      Array.from({ length: ref.pages }, (_, i): Instant => ({ kind: 'failpoint', name, n: i + 1, label: `${name}:${i + 1}` })),
    );
  const laterInstants = (): Instant[] => [
    { kind: 'failpoint', name: 'transform.before', n: 1, label: 'transform.before:1' },
    ...ref.manifest.files.map((_, i): Instant => ({
      kind: 'failpoint',
      name: 'export.mid-file',
      n: i + 1,
      label: `export.mid-file:${i + 1}`,
    })),
    { kind: 'failpoint', name: 'export.before-swap', n: 1, label: 'export.before-swap:1' },
    { kind: 'failpoint', name: 'run.before-checkpoint', n: 1, label: 'run.before-checkpoint:1' },
    { kind: 'failpoint', name: 'publish.mid-copy', n: 1, label: 'publish.mid-copy:1' },
    { kind: 'failpoint', name: 'run.before-metrics', n: 1, label: 'run.before-metrics:1' },
    { kind: 'failpoint', name: 'run.before-succeeded', n: 1, label: 'run.before-succeeded:1' },
  ];
  /** `count` integers spread evenly over [from, to], distinct. */
  const spread = (count: number, from: number, to: number): number[] => {
    const top = Math.max(to, from + count);
    return Array.from({ length: count }, (_, i) => Math.round(from + ((top - from) * i) / (count - 1)));
  };
  const timerInstants = (): Instant[] => [
    // Start-up: loading, opening (creating) the DuckDB file, migrations.
    ...spread(STARTUP_KILLS, 50, ref.startupMs).map((delayMs): Instant => ({
      kind: 'timer',
      delayMs,
      label: `kill -9 ${delayMs} ms after spawn`,
    })),
    // The run proper, from its first log line to its end: extract, sites, transform, export, checkpoint, publish.
    ...spread(RUN_KILLS, 0, ref.finishedMs - ref.startupMs).map((delayMs): Instant => ({
      kind: 'timer',
      delayMs,
      startOn: RUN_STARTED,
      label: `kill -9 ${delayMs} ms after "run started"`,
    })),
  ];

  it('the uninterrupted reference run loads exactly the API stream, over many pages', async () => {
    expect(refRun.stderr).toBe('');
    expect(diffRawEvents(twin.events, ref.events), 'two uninterrupted runs differ').toBeUndefined();
    expect(ref.startupMs).toBeGreaterThan(0);
    expect(ref.finishedMs).toBeGreaterThan(ref.startupMs);
    const expected = expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES] });
    expect(expected.length).toBeGreaterThanOrEqual(450);
    expect(expected.length).toBeLessThanOrEqual(1500);
    expect(ref.events.map((e) => [Number(e.stream_position), e.event_id, e.event_type])).toEqual(
      expected.map((e, i) => [i + 1, e.id, e.eventType]),
    );
    expect(ref.events.map((e) => JSON.parse(e.envelope) as unknown)).toEqual(expected.map((e) => e.envelope));
    expect(ref.pages).toBeGreaterThanOrEqual(Math.ceil(expected.length / PAGE_SIZE));
    expect(ref.pages).toBeGreaterThanOrEqual(10);
    expect(ref.snapshot.streams).toHaveLength(1);
    expect(ref.snapshot.streams[0]!.next_page).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(Number(ref.snapshot.streams[0]!.event_count)).toBe(expected.length);
    expect(ref.manifest.files.length).toBeGreaterThanOrEqual(4);
    const distinct = new Set([...extractInstants(), ...laterInstants(), ...timerInstants()].map((i) => i.label));
    expect(distinct.size).toBeGreaterThanOrEqual(100);
  });

  it('SIGKILL at every extract failpoint (before append, mid-append, before and after commit) on every page', async () => {
    const done = await runInstants(extractInstants(), (inst, _dir, o) => {
      if (inst.kind !== 'failpoint') return undefined;
      if (!o.died) return `the failpoint was reached but the process did not die by SIGKILL (exit ${o.exitCode})`;
      // Before COMMIT nothing of batch n stays; after it, batch n stays with everything before.
      const want = rowsAfterBatches(inst.name === 'extract.after-commit' ? inst.n : inst.n - 1);
      return o.rowsAtKill === want ? undefined : `${o.rowsAtKill} raw.events rows after the kill, expected the ${want} committed before it`;
    });
    expect(done.every((o) => o.died)).toBe(true);
  }, 600_000);

  it('SIGKILL before transform, mid-export at every file, before the final checkpoint, mid-publish, before the metrics file and before the row says succeeded', async () => {
    const done = await runInstants(laterInstants(), (inst, dir, o) => {
      if (inst.kind !== 'failpoint') return undefined;
      if (!o.died) return `the failpoint was reached but the process did not die by SIGKILL (exit ${o.exitCode})`;
      if (o.rowsAtKill !== ref.events.length)
        return `${o.rowsAtKill} raw.events rows after the kill, expected all ${ref.events.length} (extract had committed)`;
      if (inst.name === 'export.mid-file' || inst.name === 'export.before-swap') {
        // Nothing is published before the swap (docs/exports.md): the export folder holds only
        // the unpublished snapshot folder of this first export, no current, no stable path. In
        // it, mid-file: the file in flight under its temporary name, the ones before in place,
        // no manifest; before the swap: every file and the manifest.
        const exportDir = join(dir, 'exports');
        const top = existsSync(exportDir) ? readdirSync(exportDir) : [];
        const snaps = top.includes('snapshots') ? readdirSync(join(exportDir, 'snapshots')) : [];
        if (JSON.stringify(top) !== '["snapshots"]' || snaps.length !== 1)
          return `unexpected export folder after the kill: ${JSON.stringify(top)}, snapshots ${JSON.stringify(snaps)}`;
        const files = readdirSync(join(exportDir, 'snapshots', snaps[0]!));
        const tmps = files.filter((f) => f.endsWith('.tmp'));
        const done = files.filter((f) => f.endsWith('.parquet'));
        const want =
          inst.name === 'export.mid-file'
            ? { tmps: 1, done: inst.n - 1, manifest: false }
            : { tmps: 0, done: ref.manifest.files.length, manifest: true };
        if (tmps.length !== want.tmps || done.length !== want.done || files.includes('manifest.json') !== want.manifest)
          return `unexpected snapshot folder after the kill: ${JSON.stringify(files)}`;
      }
      if (inst.name === 'publish.mid-copy' && tmpLeftovers(dir).length !== 1)
        return `expected the half-written copy as a .tmp beside the db, found ${JSON.stringify(readdirSync(dir))}`;
      // The first run of the folder, killed before its live row: a marker says there was no copy before it.
      if (inst.name === 'run.before-succeeded' && readdirSync(dir).filter((f) => /\.previous\.[^.]+\.none$/.test(f)).length !== 1)
        return `expected one <copy>.previous.<runId>.none marker beside the db, found ${JSON.stringify(readdirSync(dir))}`;
      return undefined;
    });
    expect(done.every((o) => o.died)).toBe(true);
  }, 600_000);

  it(`kill -9 from outside after ${STARTUP_KILLS + RUN_KILLS} delays spread over an uninterrupted run's start-up and duration`, async () => {
    const done = await runInstants(timerInstants());
    // Most delays fall inside the run (the machine's load moves the rest past its end, where
    // the run simply finishes); the suite is pointless if the kills mostly miss.
    expect(done.filter((o) => o.died).length).toBeGreaterThanOrEqual(Math.floor((STARTUP_KILLS + RUN_KILLS) * 0.4));
    expect(done.some((o) => o.died && o.rowsAtKill > 0 && o.rowsAtKill < ref.events.length)).toBe(true);
  }, 600_000);

  it(`a loop of ${LOOP_KILLS} kills at seeded random instants on one database, then a run to completion`, async () => {
    const rnd = seededRandom(20260107);
    const dir = freshFolder('loop');
    const db = join(dir, 'warehouse.duckdb');
    const names: FailpointName[] = [
      ...EXTRACT_POINTS,
      'transform.before',
      'export.mid-file',
      'run.before-checkpoint',
      'publish.mid-copy',
      'run.before-metrics',
      'run.before-succeeded',
    ];
    let lastRows = 0;
    let died = 0;
    let midStream = 0;
    const loopLog: string[] = [];
    for (let i = 0; i < LOOP_KILLS; i++) {
      // Only instants the resumed run reaches, so that no run completes in between: extract
      // failpoints on the pages still to fetch (one empty poll once everything is in), the
      // later failpoints, or kill -9 early in the run (transform, export and publish remain).
      const remainingPages = lastRows >= ref.events.length ? 1 : ref.pages - Math.floor(lastRows / PAGE_SIZE);
      let inst: Instant;
      if (i < 2) {
        // The first two kills cut the stream mid-way for certain, whatever the machine's speed
        // (a timer kill can land after a fast extract has finished): each commits 1 to half of
        // the remaining pages, then dies.
        const n = 1 + Math.floor(rnd() * Math.max(1, Math.floor((remainingPages - 1) / 2)));
        inst = {
          kind: 'failpoint',
          name: 'extract.after-commit',
          n,
          label: `loop ${i + 1}: extract.after-commit:${n} (${lastRows} rows in)`,
        };
      } else if (rnd() < 0.4) {
        const delayMs = Math.round(rnd() * LOOP_TIMER_MAX_MS);
        inst = { kind: 'timer', delayMs, startOn: RUN_STARTED, label: `loop ${i + 1}: kill -9 ${delayMs} ms after "run started"` };
      } else {
        // While pages remain, mostly extract failpoints, so the loop resumes mid-stream.
        const pool = lastRows < ref.events.length && rnd() < 0.7 ? EXTRACT_POINTS : names;
        const name = pool[Math.floor(rnd() * pool.length)]!;
        const max = name.startsWith('extract.') ? remainingPages : name === 'export.mid-file' ? ref.manifest.files.length : 1;
        const n = 1 + Math.floor(rnd() * max);
        inst = { kind: 'failpoint', name, n, label: `loop ${i + 1}: ${name}:${n} (${lastRows} rows in)` };
      }
      const o = await kill(dir, inst);
      outcomes.push({ ...o, family: 'loop of kills' });
      if (o.died) died += 1;
      if (o.rowsAtKill > 0 && o.rowsAtKill < ref.events.length) midStream += 1;
      loopLog.push(`${inst.label} → ${o.died ? 'killed' : `exit ${o.exitCode}`}, ${o.rowsAtKill} rows`);
      if (inst.kind === 'failpoint') expect(o.died, `${inst.label}: failpoint reached but the process did not die`).toBe(true);
      // Committed batches are never lost by a later kill.
      expect(o.rowsAtKill, `${inst.label}: rows went backwards`).toBeGreaterThanOrEqual(lastRows);
      lastRows = o.rowsAtKill;
    }
    console.log(`loop of kills:\n  ${loopLog.join('\n  ')}`);
    expect(died).toBeGreaterThanOrEqual(LOOP_KILLS / 2);
    // The loop must have left the stream cut mid-way more than once (resumed extraction).
    expect(midStream).toBeGreaterThanOrEqual(2);
    expect(await rawEventCount(db)).toBeLessThanOrEqual(ref.events.length);
    await completeAndVerify(dir, 'loop of kills');
  }, 600_000);
});
