/**
 * A warehouse that a newer build migrated (issue: `status`, `transform`, `export` and `run`
 * exited 0 and the writing commands changed the file): every writing command refuses it
 * with exit 7 naming the build that wrote it, before anything is written; `status` reads it
 * read-only with a warning (docs/contracts.md "Warehouse tables").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { BUILD_VERSION, Warehouse } from '../../src/warehouse/Warehouse.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('a newer warehouse is refused (it was written anyway, exit 0)', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    api = await startSim({ seed: 3, patientsPerTrial: 5 });
    tmp = tempDir('recruit-etl-newer-');
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('records the build with each migration; transform, export, run and streams reset exit 7 and leave the file as it was; status warns', async () => {
    const db = join(tmp.dir, 'warehouse.duckdb');
    const exportDir = join(tmp.dir, 'exports');
    const env = { ...envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: exportDir }), RECRUIT_ETL_LOG_LEVEL: 'warn' };
    const first = await runCli(['run'], env);
    expect(first.code, first.stderr).toBe(0);

    const wh = await Warehouse.open(db);
    try {
      const builds = await wh.all<{ build: string | null }>('select build from etl.schema_migrations');
      expect(builds.length).toBe(readdirSync(join(ROOT, 'sql', 'warehouse')).filter((f) => f.endsWith('.sql')).length);
      expect(builds.every((b) => b.build === BUILD_VERSION)).toBe(true);
      await wh.run("insert into etl.schema_migrations values (999, '999_from_the_future.sql', now(), '9.9.9')");
      await wh.checkpoint();
    } finally {
      await wh.close();
    }
    const before = sha(db);
    const exportsBefore = readdirSync(join(exportDir, 'snapshots')).sort();

    for (const args of [['transform'], ['export'], ['run'], ['streams', 'reset', 'any']]) {
      const r = await runCli(args, env, { timeoutMs: 30_000 });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(7);
      expect(r.stderr).toMatch(/schema version 999 \(999_from_the_future\.sql, applied .* by recruit-etl 9\.9\.9\)/);
      expect(r.stderr).toContain(`this build (recruit-etl ${BUILD_VERSION}, newest migration 008_schema_migrations_build)`);
      expect(sha(db), `${args.join(' ')} changed the file`).toBe(before);
    }
    expect(readdirSync(join(exportDir, 'snapshots')).sort()).toEqual(exportsBefore);

    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^warning: .*schema version 999 .*recruit-etl 9\.9\.9.*read-only/m);
    const json = await runCli(['status', '--json'], env);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { warning?: string; streams: unknown[] };
    expect(doc.warning).toMatch(/recruit-etl 9\.9\.9/);
    expect(doc.streams).toHaveLength(1);
    const streams = await runCli(['streams', '--json'], env);
    expect(streams.code).toBe(0);
    expect(JSON.parse(streams.stdout)).toHaveLength(1);
    expect(streams.stderr).toMatch(/^recruit-etl: warning: .*schema version 999/m);
    expect(sha(db)).toBe(before);
  }, 120_000);

  it('a newer migration still in the WAL: transform exits 7 and neither the file nor the WAL changes (opening for writing folded the WAL in)', async () => {
    const db = join(tmp.dir, 'wal.duckdb');
    const env = { ...envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'wal-exports') }), RECRUIT_ETL_LOG_LEVEL: 'warn' };
    const first = await runCli(['extract'], env);
    expect(first.code, first.stderr).toBe(0);
    const wh = await Warehouse.open(db);
    try {
      await wh.run('pragma disable_checkpoint_on_shutdown');
      await wh.run("insert into etl.schema_migrations values (999, '999_from_the_future.sql', now(), '9.9.9')");
    } finally {
      await wh.close();
    }
    const wal = `${db}.wal`;
    expect(existsSync(wal), 'the insert stays in the WAL').toBe(true);
    const [file, log] = [sha(db), sha(wal)];
    const r = await runCli(['transform'], env, { timeoutMs: 30_000 });
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/schema version 999/);
    expect(sha(db)).toBe(file);
    expect(existsSync(wal) && sha(wal)).toBe(log);
  }, 120_000);
});
