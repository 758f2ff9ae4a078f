import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { expectedEvents } from '../../packages/mock-api/src/index.js';
import { DEFAULT_EVENT_TYPES } from '../../src/config/config.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { CLI, logLines, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

async function count(db: string, sql: string): Promise<number> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    const r = await wh.one<{ n: bigint }>(sql);
    return Number(r?.n ?? -1n);
  } finally {
    await wh.close();
  }
}

describe('recruit-etl as a process', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    api = await startSim({ seed: 3, patientsPerTrial: 40 });
    tmp = tempDir();
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('run: extract → sites → transform → export, then a second run loads nothing new', async () => {
    const db = join(tmp.dir, 'run', 'warehouse.duckdb');
    const exportDir = join(tmp.dir, 'run', 'exports');
    const env = envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: exportDir });
    const first = await runCli(['run'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const expected = expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES] });
    expect(await count(db, 'select count(*) as n from raw.events')).toBe(expected.length);
    expect(await count(db, 'select count(*) as n from main.fct_patient_funnel')).toBe(api.truth.patients.length);
    expect(await count(db, 'select count(*) as n from main.fct_contact_attempts')).toBe(api.truth.contactAttempts.length);
    const sites = Object.values(api.truth.sites).reduce((a, s) => a + s.length, 0);
    expect(await count(db, 'select count(*) as n from raw.site_snapshots')).toBe(sites);
    // Exports and manifest.
    const manifest = JSON.parse(readFileSync(join(exportDir, 'manifest.json'), 'utf8')) as {
      runId: string;
      files: { model: string; rows: number; columns: unknown[] }[];
    };
    const models = manifest.files.map((f) => f.model);
    for (const m of ['fct_patient_funnel', 'fct_contact_attempts', 'mart_recruitment_funnel', 'dim_study_website_sites'])
      expect(models).toContain(m);
    const funnel = manifest.files.find((f) => f.model === 'fct_patient_funnel')!;
    expect(funnel.rows).toBe(api.truth.patients.length);
    expect(funnel.columns.length).toBeGreaterThan(10);
    expect(statSync(join(exportDir, 'fct_patient_funnel.parquet')).mode & 0o777).toBe(0o600);
    expect(statSync(exportDir).mode & 0o777).toBe(0o700);
    // The published read-only copy for analysts.
    const copy = join(tmp.dir, 'run', 'warehouse.readonly.duckdb');
    expect(existsSync(copy)).toBe(true);
    expect(await count(copy, 'select count(*) as n from raw.events')).toBe(expected.length);
    // Logs are JSON lines with the run summary.
    const lines = logLines(first.stdout);
    expect(lines.some((l) => l['msg'] === 'run finished' && l['eventsLoaded'] === expected.length)).toBe(true);

    const second = await runCli(['run'], env);
    expect(second.code).toBe(0);
    expect(await count(db, 'select count(*) as n from raw.events')).toBe(expected.length);
    expect(await count(db, "select count(*) as n from etl.runs where status = 'succeeded'")).toBe(2);
    const finished = logLines(second.stdout).find((l) => l['msg'] === 'run finished');
    expect(finished?.['eventsLoaded']).toBe(0);

    // `export` alone changes no data: the copy is not rewritten (the same inode stays in place).
    const before = statSync(copy).ino;
    expect((await runCli(['export'], env)).code).toBe(0);
    expect(statSync(copy).ino).toBe(before);
    expect((await runCli(['transform'], env)).code).toBe(0);
    expect(statSync(copy).ino).not.toBe(before);
  });

  it('status prints streams, runs, rows and the funnel; --json is machine-readable', async () => {
    const db = join(tmp.dir, 'status.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'status-exports'), RECRUIT_ETL_LOG_LEVEL: 'warn' });
    expect((await runCli(['run'], env)).code).toBe(0);
    const text = await runCli(['status'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/streams\n/);
    expect(text.stdout).toMatch(/funnel per trial/);
    expect(text.stdout).toContain(api.truth.trialIds[0]!);
    const json = await runCli(['status', '--json'], env);
    const status = JSON.parse(json.stdout) as { streams: { status: string; events: number }[]; rows: Record<string, number> };
    expect(status.streams[0]!.status).toBe('active');
    expect(status.rows['raw.events']).toBe(status.streams[0]!.events);
  });

  it('missing options: exit 2, one line naming each option and its variable', async () => {
    const r = await runCli(['extract'], { RECRUIT_ETL_DB: join(tmp.dir, 'x.duckdb') });
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^recruit-etl: error: missing required option\(s\): /);
    for (const v of [
      'RECRUIT_ETL_BASE_URL',
      'RECRUIT_ETL_AUTH_URL',
      'RECRUIT_ETL_CLIENT_ID',
      'RECRUIT_ETL_CLIENT_SECRET',
      'RECRUIT_ETL_AUDIENCE',
      'RECRUIT_ETL_TRIAL_ID',
    ]) {
      expect(lines[0]).toContain(v);
    }
  });

  it("the bin runs through its shebang, with the V8 heap flags and the allocator setting the extract's memory relies on", () => {
    expect(readFileSync(CLI, 'utf8').split('\n')[0]).toBe(
      '#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 --heap-growing-percent=20',
    );
    const r = spawnSync(CLI, ['--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('recruit-etl <command> [options]');
  });

  it('an unknown flag or command is exit 2', async () => {
    expect((await runCli(['extract', '--trail-id', 'x'])).code).toBe(2);
    expect((await runCli(['frobnicate'])).code).toBe(2);
  });

  it('a wrong client secret: exit 3, one line, the secret nowhere in the output', async () => {
    const db = join(tmp.dir, 'auth.duckdb');
    const r = await runCli(['extract'], envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET: 'CANARY-WRONG-SECRET-42' }));
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^recruit-etl: error: .*token endpoint refused/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout + r.stderr).not.toContain('CANARY-WRONG-SECRET-42');
  });

  it('the secret can come from --client-secret-file', async () => {
    const db = join(tmp.dir, 'secretfile.duckdb');
    const file = join(tmp.dir, 'secret.txt');
    (await import('node:fs')).writeFileSync(file, `${api.options.clientSecret}\n`, { mode: 0o600 });
    const env = envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET_FILE: file });
    delete env['RECRUIT_ETL_CLIENT_SECRET'];
    const r = await runCli(['extract'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
