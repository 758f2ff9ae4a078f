/**
 * The lake's data on an object store (docs/lakehouse.md "Object storage"): a real
 * S3-compatible server, moto 5.2.5 in server mode (PyPI `moto[server]`, installed by `make
 * moto` into .make/moto), on loopback, path-style URLs, no TLS; DuckDB's httpfs 1.5.5 loaded
 * offline from .duckdb/extensions (`make extensions`); the catalog in a private PostgreSQL 15.
 * The CLI publishes with `--lake-data-path s3://…` and credentials from the AWS_* variables;
 * this process reads the tables back as an analyst would, and the credentials are found in no
 * output and no run record.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { Warehouse, sqlString } from '../../../src/warehouse/Warehouse.js';
import { ROOT, runCli, type CliResult } from '../../helpers/cli.js';
import { freePort, type PgCluster } from '../../helpers/postgres.js';
import { envFor } from '../../helpers/sim.js';
import { tempDir } from '../../helpers/tmp.js';
import { startLake, stopLake } from '../../helpers/lake.js';

const RUN_TIMEOUT_MS = 120_000;
/** moto's server, from the venv `make moto` fills (MOTO_SERVER overrides). */
const MOTO = process.env['MOTO_SERVER'] ?? join(ROOT, '.make', 'moto', 'bin', 'moto_server');
const BUCKET = 'recruit-lake';
const KEY_ID = 'AKIARECRUITETLTEST01';
const SECRET = 'moto-Secret-5f1c9e2a7b';

/** Start moto on 127.0.0.1 and wait (at most 30 s) until it answers. */
async function startMoto(): Promise<{ url: string; proc: ChildProcess; stop: () => void }> {
  if (!existsSync(MOTO)) throw new Error(`${MOTO} is missing: run \`make moto\``);
  const port = await freePort();
  const proc = spawn(MOTO, ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const stop = (): void => {
    if (proc.exitCode === null) proc.kill('SIGKILL');
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/moto-api/`, { signal: AbortSignal.timeout(2_000) });
      await r.arrayBuffer();
      return { url, proc, stop };
    } catch (err) {
      if (Date.now() > deadline || proc.exitCode !== null) {
        stop();
        throw new Error(`moto_server did not answer on ${url}: ${(err as Error).message}`);
      }
      await new Promise((res) => setTimeout(res, 250));
    }
  }
}

describe('the lake on an S3-compatible object store (moto 5.2.5, httpfs 1.5.5)', { timeout: 300_000 }, () => {
  let pg: PgCluster;
  let api: MockApi;
  let moto: Awaited<ReturnType<typeof startMoto>>;
  let tmp: ReturnType<typeof tempDir>;
  let reader: Warehouse;
  let lake: string;
  const db = (): string => join(tmp.dir, 'warehouse.duckdb');

  const aws = (): Record<string, string> => ({
    AWS_ACCESS_KEY_ID: KEY_ID,
    AWS_SECRET_ACCESS_KEY: SECRET,
    AWS_REGION: 'eu-west-1',
    AWS_ENDPOINT_URL: moto.url,
  });
  const run = (command: string, extra: Record<string, string> = {}): Promise<CliResult> =>
    runCli(
      [command],
      envFor(api, db(), {
        RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports'),
        RECRUIT_ETL_LAKE: lake,
        RECRUIT_ETL_LAKE_DATA_PATH: `s3://${BUCKET}/nightly/`,
        RECRUIT_ETL_LAKE_SCHEMA: 'objects',
        RECRUIT_ETL_LOG_LEVEL: 'debug',
        ...aws(),
        ...extra,
      }),
      { timeoutMs: RUN_TIMEOUT_MS },
    );
  const ok = (r: CliResult): void => {
    expect(r.code, `exit ${r.code} ${r.signal ?? ''}\n${r.stderr}\n${r.stdout.slice(-3000)}`).toBe(0);
  };
  const n = async (sql: string): Promise<number> => Number((await reader.one<{ n: bigint }>(sql))?.n ?? -1);
  const local = async (): Promise<{ events: number; funnel: number; runs: string }> => {
    const wh = await Warehouse.open(db(), { readOnly: true });
    try {
      const events = Number((await wh.one<{ n: bigint }>('select count(*) as n from raw.events'))?.n);
      const funnel = Number((await wh.one<{ n: bigint }>('select count(*) as n from main.fct_patient_funnel'))?.n);
      const runs = (await wh.all<{ r: string }>('select to_json(r)::varchar as r from etl.runs r')).map((x) => x.r).join('\n');
      return { events, funnel, runs };
    } finally {
      await wh.close();
    }
  };

  beforeAll(async () => {
    moto = await startMoto();
    const made = await fetch(`${moto.url}/${BUCKET}`, { method: 'PUT', signal: AbortSignal.timeout(10_000) });
    expect(made.status).toBe(200);
    ({ pg, api, tmp, reader, lake } = await startLake(
      'recruit-etl-lake-s3-',
      { seed: 41, patientsPerTrial: 40, releaseFraction: 0.5 },
      true,
    ));
  }, 120_000);

  afterAll(async () => {
    await stopLake({ pg, api, tmp, reader });
    moto?.stop();
  });

  it('publishes into s3://bucket/prefix/ and a second process reads the tables back; the credentials reach no output', async () => {
    const first = await run('run');
    ok(first);
    api.grow(40);
    const night = await run('run');
    ok(night);
    // The reader: its own DuckDB, the documented secret (docs/lakehouse.md "Object storage").
    const endpoint = new URL(moto.url).host;
    await reader.run(
      `create temporary secret lake_s3 (type s3, key_id ${sqlString(KEY_ID)}, secret ${sqlString(SECRET)}, region 'eu-west-1', endpoint ${sqlString(endpoint)}, url_style 'path', use_ssl false)`,
    );
    await reader.run(`attach ${sqlString(lake)} as rl (read_only)`);
    const mine = await local();
    expect(mine.events).toBeGreaterThan(0);
    expect(await n('select count(*) as n from rl.objects.raw_events')).toBe(mine.events);
    expect(await n('select count(distinct (stream_id, stream_position)) as n from rl.objects.raw_events')).toBe(mine.events);
    expect(await n('select count(*) as n from rl.objects.fct_patient_funnel')).toBe(mine.funnel);
    // Every data file is an object in the bucket under the prefix, as moto lists them.
    const files = (
      await reader.all<{ f: string }>("select data_file as f from ducklake_list_files('rl', 'raw_events', schema => 'objects')")
    ).map((r) => r.f);
    expect(files.length).toBeGreaterThan(0);
    console.log(`moto holds ${files.length} raw_events file(s) under s3://${BUCKET}/nightly/objects/, all listed by the catalog`);
    const listing = await (
      await fetch(`${moto.url}/${BUCKET}?list-type=2&prefix=nightly/`, { signal: AbortSignal.timeout(10_000) })
    ).text();
    for (const f of files) {
      expect(f.startsWith(`s3://${BUCKET}/nightly/objects/raw_events/`), f).toBe(true);
      expect(listing).toContain(`<Key>${f.slice(`s3://${BUCKET}/`.length)}</Key>`);
    }
    // The secret and the key id: in no log line, no error, no run record.
    for (const text of [first.stdout, first.stderr, night.stdout, night.stderr, mine.runs]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(KEY_ID);
    }
  });

  it('a bucket the store refuses fails the publish (exit 7), and the message shows no credential', async () => {
    pg.createDb('lake_missing_bucket');
    const r = await run('publish', {
      RECRUIT_ETL_LAKE: `ducklake:postgres:${pg.conninfo('lake_missing_bucket')}`,
      RECRUIT_ETL_LAKE_DATA_PATH: 's3://no-such-bucket/x/',
    });
    console.log(`moto answered a publish into a missing bucket: exit ${r.code}: ${r.stderr.trim().split('\n')[0]}`);
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/publishing to the lake failed|cannot attach the lake/);
    expect(r.stderr + r.stdout).not.toContain(SECRET);
    expect(r.stderr + r.stdout).not.toContain(KEY_ID);
  });
});
