/**
 * Helpers for the crash suite (docs/contracts.md guarantee 2): kill the CLI with SIGKILL after a
 * delay, read back the state a run left, check exports and the published copy, and run
 * iterations with bounded concurrency.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Warehouse, sqlString } from '../../src/warehouse/Warehouse.js';
import { CLI, ROOT, type CliResult } from './cli.js';

/** A CLI result, plus whether our timer fired before the process ended. */
export interface KilledCliResult extends CliResult {
  /** True when the timer sent SIGKILL (the process was still running at the delay). */
  timerFired: boolean;
  /** Wall time from spawn to exit. */
  elapsedMs: number;
}

/**
 * Run the built CLI like {@link runCli} and send it SIGKILL (`kill -9`) `delayMs` after
 * spawning, or after its stdout first contains `startOn` (a landmark such as a log
 * message, so that the delay is measured from a known point of the run whatever the
 * machine's load). When it ends before, the timer is cancelled.
 */
export function runCliKilledAfter(
  args: string[],
  env: Record<string, string>,
  delayMs: number,
  opts: { timeoutMs?: number; startOn?: string } = {},
): Promise<KilledCliResult> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && v !== undefined) base[k] = v;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timerFired = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      timer = setTimeout(() => {
        timerFired = child.exitCode === null && child.signalCode === null;
        child.kill('SIGKILL');
      }, delayMs);
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (timer === undefined && opts.startOn !== undefined && stdout.includes(opts.startOn)) arm();
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    if (opts.startOn === undefined) arm();
    const guard = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr, timerFired, elapsedMs: Date.now() - started });
    });
  });
}

/** A small seeded PRNG (mulberry32), so "random" kill instants are reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Run `fn` over `items` with at most `concurrency` in flight; never rejects: each item's
 * error is returned in its slot.
 */
export async function mapPool<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<({ ok: true; value: R } | { ok: false; error: unknown })[]> {
  const out: ({ ok: true; value: R } | { ok: false; error: unknown })[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      try {
        out[i] = { ok: true, value: await fn(items[i]!, i) };
      } catch (error) {
        out[i] = { ok: false, error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

/** One row of raw.events as compared between runs. */
export interface RawEventRow {
  stream_position: bigint;
  event_id: string;
  event_type: string | null;
  envelope: string;
}

/** The stored cursor of a stream. */
export interface StreamRow {
  stream_id: string;
  next_page: string | null;
  has_next_page: boolean | null;
  event_count: bigint;
  status: string;
}

/** What a database holds after a run, for the comparisons of the crash suite. */
export interface DbSnapshot {
  events: RawEventRow[];
  streams: StreamRow[];
  runs: { status: string; n: bigint }[];
  /** Distinct stream_id values in raw.events. */
  streamIds: string[];
}

/** Open `db` read-only, run `fn`, close. */
export async function withReadOnly<T>(db: string, fn: (wh: Warehouse) => Promise<T>): Promise<T> {
  const wh = await Warehouse.open(db, { readOnly: true, memoryLimit: '256MB', threads: 1 });
  try {
    return await fn(wh);
  } finally {
    await wh.close();
  }
}

/** raw.events, etl.streams and run counts of `db`. */
export function snapshotDb(db: string): Promise<DbSnapshot> {
  return withReadOnly(db, async (wh) => ({
    events: await wh.all<RawEventRow>(
      'select stream_position, event_id, event_type, envelope::varchar as envelope from raw.events order by stream_id, stream_position',
    ),
    streams: await wh.all<StreamRow>('select stream_id, next_page, has_next_page, event_count, status from etl.streams order by stream_id'),
    runs: await wh.all<{ status: string; n: bigint }>('select status, count(*) as n from etl.runs group by status order by status'),
    streamIds: (await wh.all<{ stream_id: string }>('select distinct stream_id from raw.events order by 1')).map((r) => r.stream_id),
  }));
}

/**
 * raw.events of `db` in stream order (empty when the file or the table does not exist yet,
 * e.g. after a kill before the first migration).
 */
export async function rawEventsIfAny(db: string): Promise<RawEventRow[]> {
  if (!existsSync(db)) return [];
  return withReadOnly(db, async (wh) => {
    const t = await wh.one<{ n: bigint }>(
      "select count(*) as n from information_schema.tables where table_schema = 'raw' and table_name = 'events'",
    );
    if (!t || t.n === 0n) return [];
    return wh.all<RawEventRow>(
      'select stream_position, event_id, event_type, envelope::varchar as envelope from raw.events order by stream_id, stream_position',
    );
  });
}

/** Number of rows in raw.events (0 when the file or the table does not exist yet). */
export async function rawEventCount(db: string): Promise<number> {
  return (await rawEventsIfAny(db)).length;
}

/** Whether `actual` is `expected[0 .. actual.length)` row for row; a one-line reason when not. */
export function prefixProblem(actual: readonly RawEventRow[], expected: readonly RawEventRow[]): string | undefined {
  if (actual.length > expected.length) return `${actual.length} rows, more than the ${expected.length} of an uninterrupted run`;
  return diffRawEvents(actual, expected.slice(0, actual.length));
}

/**
 * The first difference between two raw.events listings, as one line; undefined when equal
 * row for row.
 */
export function diffRawEvents(actual: readonly RawEventRow[], expected: readonly RawEventRow[]): string | undefined {
  const n = Math.min(actual.length, expected.length);
  for (let i = 0; i < n; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    if (
      a.stream_position !== e.stream_position ||
      a.event_id !== e.event_id ||
      a.event_type !== e.event_type ||
      a.envelope !== e.envelope
    ) {
      return `row ${i + 1} differs: got (${a.stream_position}, ${a.event_id}, ${a.event_type}), expected (${e.stream_position}, ${e.event_id}, ${e.event_type})${a.envelope !== e.envelope ? ' [envelope differs]' : ''}`;
    }
  }
  if (actual.length !== expected.length) return `${actual.length} rows, expected ${expected.length}`;
  return undefined;
}

/** Problems with positions and ids of one stream's rows (contiguous 1..n, each id once). */
export function streamShapeProblems(rows: readonly RawEventRow[]): string[] {
  const problems: string[] = [];
  rows.forEach((r, i) => {
    if (r.stream_position !== BigInt(i + 1) && problems.length < 3)
      problems.push(`position ${r.stream_position} at row ${i + 1} (not contiguous from 1)`);
  });
  const seen = new Set<string>();
  for (const r of rows) {
    if (seen.has(r.event_id) && problems.length < 6) problems.push(`event ${r.event_id} appears twice`);
    seen.add(r.event_id);
  }
  return problems;
}

/** manifest.json as written by the export stage. */
export interface ManifestFile {
  runId: string;
  exportedAt: string;
  files: { model: string; file: string; rows: number; bytes: number; columns: { name: string; type: string }[] }[];
}

/** What {@link checkExports} found. */
export interface ExportCheck {
  manifest: ManifestFile;
  /** Rows read back from each Parquet file (by file name). */
  rowsByFile: Record<string, number>;
  problems: string[];
}

/**
 * Read every Parquet file of `exportDir` whole with DuckDB `read_parquet` (an in-memory
 * warehouse) and compare with manifest.json.
 */
export async function checkExports(exportDir: string): Promise<ExportCheck> {
  const problems: string[] = [];
  const manifestPath = join(exportDir, 'manifest.json');
  if (!existsSync(manifestPath)) throw new Error(`${manifestPath} is missing`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as ManifestFile;
  const parquet = readdirSync(exportDir)
    .filter((f) => f.endsWith('.parquet'))
    .sort();
  const listed = manifest.files.map((f) => f.file).sort();
  if (JSON.stringify(parquet) !== JSON.stringify(listed))
    problems.push(`files ${JSON.stringify(parquet)} but manifest lists ${JSON.stringify(listed)}`);
  const rowsByFile: Record<string, number> = {};
  const mem = await Warehouse.open(':memory:', { memoryLimit: '256MB', threads: 1 });
  try {
    for (const f of parquet) {
      const path = join(exportDir, f);
      try {
        // Read every row and column, not only the footer's count.
        const rows = await mem.all(`select * from read_parquet(${sqlString(path)})`);
        rowsByFile[f] = rows.length;
      } catch (err) {
        problems.push(`${f} is unreadable: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    await mem.close();
  }
  for (const entry of manifest.files) {
    const got = rowsByFile[entry.file];
    if (got !== undefined && got !== entry.rows) problems.push(`${entry.file}: manifest says ${entry.rows} rows, file has ${got}`);
    if (existsSync(join(exportDir, entry.file)) && statSync(join(exportDir, entry.file)).size !== entry.bytes) {
      problems.push(`${entry.file}: manifest says ${entry.bytes} bytes, file has ${statSync(join(exportDir, entry.file)).size}`);
    }
  }
  return { manifest, rowsByFile, problems };
}

/** Names ending in `.tmp` (files or folders) directly inside `dir`. */
export function tmpLeftovers(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.tmp'));
}

/**
 * Statuses of the etl.runs rows of `db` started at or after `sinceMs` (Unix ms), oldest first
 * (empty when the file or the table does not exist yet).
 */
export async function runStatusesSince(db: string, sinceMs: number): Promise<string[]> {
  if (!existsSync(db)) return [];
  return withReadOnly(db, async (wh) => {
    const t = await wh.one<{ n: bigint }>(
      "select count(*) as n from information_schema.tables where table_schema = 'etl' and table_name = 'runs'",
    );
    if (!t || t.n === 0n) return [];
    const rows = await wh.all<{ status: string }>('select status from etl.runs where epoch_ms(started_at) >= ? order by started_at', [
      sinceMs,
    ]);
    return rows.map((r) => r.status);
  });
}

/**
 * Whether the run rows a CLI process left agree with how it ended: killed, every row it
 * started is still `running` (the next command closes them as `abandoned`); exit 0, one row
 * and it is `succeeded`. A one-line reason when not.
 */
export function runRowProblem(statuses: readonly string[], died: boolean, exitCode: number | null): string | undefined {
  if (died)
    return statuses.every((s) => s === 'running')
      ? undefined
      : `killed, yet its etl.runs rows say ${JSON.stringify(statuses)} (expected running)`;
  if (exitCode === 0)
    return statuses.length === 1 && statuses[0] === 'succeeded'
      ? undefined
      : `exit 0, yet its etl.runs rows say ${JSON.stringify(statuses)}`;
  return statuses.includes('succeeded') ? `exit ${exitCode}, yet etl.runs says succeeded` : undefined;
}
