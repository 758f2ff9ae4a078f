/**
 * What an operator meets at the command line: --help per command, configuration mistakes that
 * name the option and its variable (exit 2), stray variables that never fail a run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { logLines, ROOT, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

describe('options and configuration mistakes', () => {
  let tmp: ReturnType<typeof tempDir>;
  let db: string;
  beforeAll(() => {
    tmp = tempDir();
    db = join(tmp.dir, 'w.duckdb');
  });
  afterAll(() => tmp.cleanup());

  it('--help of a command shows only its options, each with its variable, and the exit codes', async () => {
    const status = await runCli(['status', '--help']);
    expect(status.code).toBe(0);
    expect(status.stdout).not.toContain('--client-secret');
    expect(status.stdout).not.toContain('--batch-pages');
    expect(status.stdout).toMatch(/--db\s+DuckDB warehouse file \[env RECRUIT_ETL_DB\]/);
    expect(status.stdout).toContain('[default: 2GB]');
    for (const code of ['0 ', '2 ', '5 ', '7 ', '130/143 ']) expect(status.stdout).toContain(`\n  ${code}`);
    const extract = await runCli(['extract', '--help']);
    expect(extract.stdout).toContain('[env RECRUIT_ETL_CLIENT_SECRET_FILE]');
    expect(extract.stdout).toContain('[default: 1000]');
    expect(extract.stdout).not.toContain('--export-dir');
    expect((await runCli(['status', '--client-secret', 'x'])).code).toBe(2);
  });

  it('unknown RECRUIT_ETL_* variables: one warning naming them, never fatal', async () => {
    const r = await runCli(['transform'], {
      RECRUIT_ETL_DB: db,
      RECRUIT_ETL_SERVICE_HOST: '10.0.0.7',
      RECRUIT_ETL_SERVICE_PORT: '80',
      RECRUIT_ETL_PORT: 'tcp://10.0.0.7:80',
      RECRUIT_ETL_PORT_80_TCP_ADDR: '10.0.0.7',
      RECRUIT_ETL_MICROSITE_ID: 'another command reads this one',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const warnings = logLines(r.stdout).filter((l) => Array.isArray(l['variables']));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!['variables']).toEqual(['RECRUIT_ETL_PORT_80_TCP_ADDR', 'RECRUIT_ETL_SERVICE_HOST', 'RECRUIT_ETL_SERVICE_PORT']);
    expect(r.stdout).not.toContain('10.0.0.7');
  });

  it('a missing, unreadable or invalid --config file is exit 2 naming --config and RECRUIT_ETL_CONFIG', async () => {
    const notJson = join(tmp.dir, 'bad.json');
    writeFileSync(notJson, '{"db": ');
    const unknownKey = join(tmp.dir, 'unknown.json');
    writeFileSync(unknownKey, '{"dbb": "x.duckdb"}');
    const cases: [string[], Record<string, string>][] = [
      [['transform', '--config', join(tmp.dir, 'missing.json')], {}],
      [['transform'], { RECRUIT_ETL_CONFIG: join(tmp.dir, 'missing.json') }],
      [['transform', '--config', tmp.dir], {}],
      [['transform', '--config', notJson], {}],
      [['status', '--config', unknownKey], {}],
    ];
    for (const [args, env] of cases) {
      const r = await runCli(args, { RECRUIT_ETL_DB: db, ...env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^recruit-etl: error: --config \(RECRUIT_ETL_CONFIG\): /);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('every invalid option, from a flag, a variable or the --config file, is exit 2 naming the option and its variable', async () => {
    const file = join(tmp.dir, 'opts.json');
    writeFileSync(file, JSON.stringify({ 'body-timeout': 'slow' }));
    const cases: [string[], Record<string, string>, string][] = [
      [['transform', '--memory-limit', 'lots'], {}, '--memory-limit (RECRUIT_ETL_MEMORY_LIMIT)'],
      [['transform'], { RECRUIT_ETL_MEMORY_LIMIT: 'lots' }, '--memory-limit (RECRUIT_ETL_MEMORY_LIMIT)'],
      [['extract', '--batch-pages', 'many'], {}, '--batch-pages (RECRUIT_ETL_BATCH_PAGES)'],
      [['extract'], { RECRUIT_ETL_BASE_URL: 'ftp://x' }, '--base-url (RECRUIT_ETL_BASE_URL)'],
      [['sites', '--config', file], {}, '--body-timeout (RECRUIT_ETL_BODY_TIMEOUT)'],
      [['status', '--log-level', 'loud'], {}, '--log-level (RECRUIT_ETL_LOG_LEVEL)'],
    ];
    for (const [args, env, label] of cases) {
      const r = await runCli(args, { RECRUIT_ETL_DB: db, ...env });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(label);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('a wrong base URL', () => {
  it("a 404 to a new stream's first request is exit 2 pointing at RECRUIT_ETL_BASE_URL; on a stored cursor it stays exit 6", async () => {
    const api = await startSim({ seed: 4, patientsPerTrial: 5 });
    const tmp = tempDir();
    try {
      const db = join(tmp.dir, 'w.duckdb');
      const wrong = await runCli(['extract'], envFor(api, db, { RECRUIT_ETL_BASE_URL: `${api.baseUrl}/v2` }));
      expect(wrong.code, wrong.stderr).toBe(2);
      expect(wrong.stderr.trim().split('\n')).toHaveLength(1);
      expect(wrong.stderr).toMatch(/HTTP 404 on the first request of a new stream/);
      expect(wrong.stderr).toContain('RECRUIT_ETL_BASE_URL');

      const env = envFor(api, db);
      expect((await runCli(['extract'], env)).code).toBe(0);
      // The stored cursor now answers 404: the upstream broke it, not the configuration.
      api.faults.add({ endpoint: 'events', kind: 'status', code: 404, times: 1 });
      const resumed = await runCli(['extract'], env);
      expect(resumed.code, resumed.stderr).toBe(6);
      expect(resumed.stderr).not.toContain('RECRUIT_ETL_BASE_URL');
    } finally {
      await api.close();
      tmp.cleanup();
    }
  });
});

describe('a busy port', () => {
  it('mock-api: exit 2 naming --port; make demo: says how to pick another (DEMO_PORT=…)', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    const tmp = tempDir();
    try {
      const sim = await runCli(['mock-api', '--port', String(port)]);
      expect(sim.code).toBe(2);
      expect(sim.stderr.trim()).toBe(`recruit-etl: error: --port (RECRUIT_ETL_PORT): 127.0.0.1:${port} is already in use (pick another port, or 0 for any free one)`);

      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && !k.startsWith('DEMO_') && v !== undefined) env[k] = v;
      const demo = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn('bash', ['scripts/demo.sh'], { cwd: ROOT, env: { ...env, DEMO_PORT: String(port), DEMO_DATA_DIR: tmp.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, stderr }));
      });
      expect(demo.code).toBe(2);
      expect(demo.stderr).toContain(`demo: port ${port} is already in use`);
      expect(demo.stderr).toContain('make demo DEMO_PORT=');
      expect(demo.stderr).not.toContain('report it');
    } finally {
      holder.close();
      tmp.cleanup();
    }
  });
});
