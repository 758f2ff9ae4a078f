/**
 * The lake's figures (docs/lakehouse.md "Measured"; README "Beyond one machine"): a private
 * PostgreSQL catalog, a history of BENCH_EVENTS synthetic events (default 200,000) loaded by a
 * `run` without the lake, then
 *
 * 1. the first `publish` of the whole history (raw events and every model);
 * 2. BENCH_NIGHTS nights (default 3) of BENCH_NIGHT_SHARE × history new events (0.01), each a
 *    `run` with `--lake`: the publish stage's time as the run recorded it;
 * 3. the Parquet files of the lake after each step (all tables, and `raw_events` alone).
 *
 * Results: bench/results/<date>-lake-<N>.json. Run: `make bench-lake` (BENCH_EVENTS=1000000).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { startMockApi } from '../packages/mock-api/src/index.js';
import { Warehouse } from '../src/warehouse/Warehouse.js';
import { startPostgres } from '../test/helpers/postgres.js';

const N = Number(process.env['BENCH_EVENTS'] ?? 200_000);
const NIGHTS = Number(process.env['BENCH_NIGHTS'] ?? 3);
const SHARE = Number(process.env['BENCH_NIGHT_SHARE'] ?? 0.01);
const CLI = join(PACKAGE_ROOT, 'dist', 'cli.js');
const WORK = join(PACKAGE_ROOT, 'bench', '.work-lake');

async function cli(args: string[], env: Record<string, string>): Promise<number> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code] = (await once(proc, 'close')) as [number | null];
  if (code !== 0) throw new Error(`recruit-etl ${args.join(' ')} exited ${code}: ${stderr.trim()}`);
  return performance.now() - t0;
}

/** The stages of the last run as `etl.runs` recorded them. */
async function lastStages(db: string): Promise<Record<string, { durationMs: number } & Record<string, number>>> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    const row = await wh.one<{ s: string }>('select stages::varchar as s from etl.runs order by started_at desc limit 1');
    return JSON.parse(row?.s ?? '{}') as Record<string, { durationMs: number } & Record<string, number>>;
  } finally {
    await wh.close();
  }
}

/** Parquet files under `dir` (recursively) and their total bytes. */
function parquet(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.parquet')) {
        files += 1;
        bytes += statSync(p).size;
      }
    }
  };
  walk(dir);
  return { files, bytes };
}

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true, mode: 0o700 });
  const night = Math.max(1, Math.round(N * SHARE));
  const pg = await startPostgres();
  const api = await startMockApi({
    syntheticEvents: N + night * NIGHTS,
    syntheticLateTail: night,
    releaseFraction: N / (N + night * NIGHTS),
  });
  try {
    pg.createDb('lake');
    const db = join(WORK, 'warehouse.duckdb');
    const data = join(WORK, 'lake-data');
    const env = {
      RECRUIT_ETL_DB: db,
      RECRUIT_ETL_BASE_URL: api.baseUrl,
      RECRUIT_ETL_AUTH_URL: api.authUrl,
      RECRUIT_ETL_CLIENT_ID: api.options.clientId,
      RECRUIT_ETL_CLIENT_SECRET: api.options.clientSecret,
      RECRUIT_ETL_AUDIENCE: api.options.audience,
      RECRUIT_ETL_TRIAL_ID: api.truth.trialIds.join(','),
      RECRUIT_ETL_PAGE_SIZE: '1000',
      RECRUIT_ETL_EXPORT_DIR: join(WORK, 'exports'),
      RECRUIT_ETL_LOG_LEVEL: 'warn',
    };
    const lakeEnv = {
      ...env,
      RECRUIT_ETL_LAKE: `ducklake:postgres:${pg.conninfo('lake')}`,
      RECRUIT_ETL_LAKE_DATA_PATH: data,
      RECRUIT_ETL_LAKE_SCHEMA: 'bench',
    };
    console.log(`bench lake: history of ${N} events, ${NIGHTS} nights of ${night}`);
    const historyMs = await cli(['run'], env);
    console.log(`  history run (no lake): ${(historyMs / 1000).toFixed(1)} s`);
    const firstMs = await cli(['publish'], lakeEnv);
    const first = (await lastStages(db))['publish'];
    const afterFirst = { all: parquet(data), rawEvents: parquet(join(data, 'bench', 'raw_events')) };
    console.log(
      `  first publish: ${(firstMs / 1000).toFixed(1)} s (stage ${((first?.durationMs ?? 0) / 1000).toFixed(1)} s), ${afterFirst.all.files} Parquet files, ${(afterFirst.all.bytes / 1e6).toFixed(1)} MB`,
    );
    const nights: Record<string, unknown>[] = [];
    for (let i = 1; i <= NIGHTS; i++) {
      api.grow(night);
      const ms = await cli(['run'], lakeEnv);
      const st = await lastStages(db);
      const files = { all: parquet(data), rawEvents: parquet(join(data, 'bench', 'raw_events')) };
      nights.push({ night: i, runMs: ms, stages: st, files });
      console.log(
        `  night ${i}: run ${(ms / 1000).toFixed(1)} s, publish stage ${((st['publish']?.durationMs ?? 0) / 1000).toFixed(2)} s (${st['publish']?.['events']} events, ${st['publish']?.['models']} models, ${st['publish']?.['merged']} merged by key); ${files.all.files} files, raw_events ${files.rawEvents.files}`,
      );
    }
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      historyEvents: N,
      nightEvents: night,
      historyRunMs: historyMs,
      firstPublish: { ms: firstMs, stage: first, files: afterFirst },
      nights,
    };
    const dir = join(PACKAGE_ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${out.date.slice(0, 10)}-lake-${N}.json`);
    writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
    console.log(`bench lake: figures written to ${file}`);
  } finally {
    await api.close();
    pg.stop();
    if (process.env['BENCH_KEEP'] !== '1') rmSync(WORK, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
