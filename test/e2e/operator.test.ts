/**
 * What an operator meets at the command line: --help per command, configuration mistakes that
 * name the option and its variable (exit 2), stray variables that never fail a run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { logLines, ROOT, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

async function count(db: string, sql: string): Promise<number> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    return Number((await wh.one<{ n: bigint }>(sql))?.n ?? -1n);
  } finally {
    await wh.close();
  }
}

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
    // yargs wraps a long description at the terminal's width, inside the [env …] note too.
    expect(extract.stdout.replace(/\s+/g, ' ')).toContain('[env RECRUIT_ETL_CLIENT_SECRET_FILE]');
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
    expect(warnings[0]!['variables']).toEqual([
      'RECRUIT_ETL_PORT',
      'RECRUIT_ETL_PORT_80_TCP_ADDR',
      'RECRUIT_ETL_SERVICE_HOST',
      'RECRUIT_ETL_SERVICE_PORT',
    ]);
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
      expect(sim.stderr.trim()).toBe(
        `recruit-etl: error: --port (RECRUIT_ETL_PORT): 127.0.0.1:${port} is already in use (pick another port, or 0 for any free one)`,
      );

      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env))
        if (!k.startsWith('RECRUIT_ETL_') && !k.startsWith('DEMO_') && v !== undefined) env[k] = v;
      const demo = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn('bash', ['scripts/demo.sh'], {
          cwd: ROOT,
          env: { ...env, DEMO_PORT: String(port), DEMO_DATA_DIR: tmp.dir },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
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

describe('--file-mode', () => {
  const mode = (p: string): string => `0${(statSync(p).mode & 0o777).toString(8)}`;

  it('0640: files for readers 0640 and their folders 0750 whatever the umask; the live database stays 0600', async () => {
    const api = await startSim({ seed: 6, patientsPerTrial: 5 });
    const tmp = tempDir();
    try {
      const dataDir = join(tmp.dir, 'data');
      const db = join(dataDir, 'w.duckdb');
      const exportDir = join(tmp.dir, 'out', 'exports');
      const r = await runCli(
        ['run', '--file-mode', '0640'],
        envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: exportDir, RECRUIT_ETL_LOG_LEVEL: 'warn' }),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(mode(db)).toBe('0600');
      expect(mode(join(dataDir, 'w.readonly.duckdb'))).toBe('0640');
      expect(mode(dataDir)).toBe('0750');
      for (const d of [join(tmp.dir, 'out'), exportDir, join(exportDir, 'snapshots')]) expect(mode(d), d).toBe('0750');
      const snapshots = readdirSync(join(exportDir, 'snapshots'));
      expect(snapshots).toHaveLength(1);
      const snap = join(exportDir, 'snapshots', snapshots[0]!);
      expect(mode(snap)).toBe('0750');
      const files = readdirSync(snap);
      expect(files).toContain('manifest.json');
      expect(files.filter((f) => f.endsWith('.parquet')).length).toBeGreaterThan(3);
      for (const f of files) expect(mode(join(snap, f)), f).toBe('0640');
      expect(lstatSync(join(exportDir, 'manifest.json')).isSymbolicLink()).toBe(true);
      expect(mode(join(exportDir, 'report.html'))).toBe('0640');

      // Back to the default: new files owner-only again; folders are never narrowed.
      const again = await runCli(['export'], envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: exportDir, RECRUIT_ETL_LOG_LEVEL: 'warn' }));
      expect(again.code, again.stderr).toBe(0);
      expect(mode(join(exportDir, 'manifest.json'))).toBe('0600');
      expect(mode(join(exportDir, 'current/'))).toBe('0700');
      expect(mode(exportDir)).toBe('0750');

      const bad = await runCli(['export', '--file-mode', '0666'], envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: exportDir }));
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--file-mode (RECRUIT_ETL_FILE_MODE)');
    } finally {
      await api.close();
      tmp.cleanup();
    }
  });
});

describe('--metrics-file', () => {
  type Family = { name: string; type: string; metrics: { value: string; labels?: Record<string, string> }[] };
  const read = (path: string): Map<string, Map<string, number>> => {
    const out = new Map<string, Map<string, number>>();
    for (const f of parsePrometheusTextFormat(readFileSync(path, 'utf8')) as Family[]) {
      out.set(
        f.name,
        new Map(f.metrics.map((m) => [m.labels?.['command'] ?? m.labels?.['stream_id'] ?? m.labels?.['stage'] ?? '', Number(m.value)])),
      );
    }
    return out;
  };

  it("is rewritten after every command, success or failure, keeping the other commands' series", async () => {
    const api = await startSim({ seed: 8, patientsPerTrial: 5 });
    const tmp = tempDir();
    try {
      const db = join(tmp.dir, 'w.duckdb');
      const file = join(tmp.dir, 'textfile', 'recruit_etl.prom');
      // --file-mode is the exports'; the metrics file has its own mode, default 0644.
      const env = envFor(api, db, { RECRUIT_ETL_METRICS_FILE: file, RECRUIT_ETL_FILE_MODE: '0600', RECRUIT_ETL_LOG_LEVEL: 'warn' });
      const before = Date.now() / 1000;
      const first = await runCli(['extract'], env);
      expect(first.code, first.stderr).toBe(0);
      const loaded = await count(db, 'select count(*) as n from raw.events');
      expect(loaded).toBeGreaterThan(0);
      let m = read(file);
      expect(m.get('recruit_etl_events_loaded_total')!.get('extract')).toBe(loaded);
      expect(m.get('recruit_etl_last_exit_code')!.get('extract')).toBe(0);
      const success = m.get('recruit_etl_last_success_timestamp_seconds')!.get('extract')!;
      expect(success).toBeGreaterThanOrEqual(Math.floor(before));
      expect(m.get('recruit_etl_last_run_duration_seconds')!.get('extract')).toBeGreaterThan(0);
      // The warehouse's series: the stream's events, this run's success, a fresh cursor.
      expect([...m.get('recruit_etl_stream_events_total')!.values()]).toEqual([loaded]);
      expect(m.get('recruit_etl_last_successful_extract_timestamp_seconds')!.get('')).toBe(success);
      expect(m.get('recruit_etl_cursor_age_seconds')!.get('')).toBeLessThan(60);
      expect(m.get('recruit_etl_newest_event_published_timestamp_seconds')!.get('')).toBeGreaterThan(0);
      expect(`0${(statSync(file).mode & 0o777).toString(8)}`).toBe('0644');

      const refused = await runCli(['transform', '--memory-limit', 'lots'], env);
      expect(refused.code).toBe(2);
      m = read(file);
      expect(m.get('recruit_etl_last_exit_code')!.get('transform')).toBe(2);
      expect(m.get('recruit_etl_last_success_timestamp_seconds')!.has('transform')).toBe(false);
      expect(m.get('recruit_etl_last_exit_code')!.get('extract')).toBe(0); // kept
      expect(m.get('recruit_etl_events_loaded_total')!.get('extract')).toBe(loaded);

      api.faults.add({ endpoint: 'events', kind: 'status', code: 503, times: Infinity });
      const down = await runCli(['extract'], { ...env, RECRUIT_ETL_DEADLINE: '2' });
      expect(down.code).toBe(4);
      m = read(file);
      expect(m.get('recruit_etl_last_exit_code')!.get('extract')).toBe(4);
      expect(m.get('recruit_etl_last_success_timestamp_seconds')!.get('extract')).toBe(success); // the last success stays
      expect(m.get('recruit_etl_last_run_timestamp_seconds')!.get('extract')).toBeGreaterThan(success);
      expect(m.get('recruit_etl_events_loaded_total')!.get('extract')).toBe(loaded);
      expect(readdirSync(join(tmp.dir, 'textfile'))).toEqual(['recruit_etl.prom']); // no temporary left
    } finally {
      await api.close();
      tmp.cleanup();
    }
  });
  it("a command refused on the warehouse's lock (exit 5) leaves the file to the process that holds it", async () => {
    const tmp = tempDir();
    try {
      const db = join(tmp.dir, 'w.duckdb');
      const file = join(tmp.dir, 'recruit_etl.prom');
      const env = { RECRUIT_ETL_DB: db, RECRUIT_ETL_METRICS_FILE: file, RECRUIT_ETL_LOG_LEVEL: 'warn' };
      const ok = await runCli(['transform'], env);
      expect(ok.code, ok.stderr).toBe(0);
      const before = readFileSync(file, 'utf8');
      const holder = await Warehouse.open(db);
      try {
        const refused = await runCli(['transform'], env);
        expect(refused.code, refused.stderr).toBe(5);
      } finally {
        await holder.close();
      }
      expect(readFileSync(file, 'utf8')).toBe(before);
    } finally {
      tmp.cleanup();
    }
  }, 90_000);

  it('a FIFO, a device or a folder as --metrics-file is exit 2 naming the option, at once, and is left as it was', async () => {
    const tmp = tempDir();
    try {
      const fifo = join(tmp.dir, 'fifo.prom');
      spawnSync('mkfifo', [fifo]);
      const dir = join(tmp.dir, 'dir.prom');
      mkdirSync(dir);
      for (const [path, kind] of [
        [fifo, 'a FIFO (named pipe)'],
        ['/dev/zero', 'a character device'],
        [dir, 'a folder'],
      ] as const) {
        // A blocking open of the FIFO would hang until the 20 s guard kills it (signal set).
        const r = await runCli(
          ['transform'],
          { RECRUIT_ETL_DB: join(tmp.dir, 'w.duckdb'), RECRUIT_ETL_METRICS_FILE: path },
          { timeoutMs: 20_000 },
        );
        expect(r.signal, path).toBeNull();
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toContain(`--metrics-file (RECRUIT_ETL_METRICS_FILE) ${path} is ${kind}`);
      }
      expect(lstatSync(fifo).isFIFO()).toBe(true);
      expect(lstatSync('/dev/zero').isCharacterDevice()).toBe(true);
      expect(readdirSync(dir)).toEqual([]);
      expect(readdirSync(tmp.dir).sort()).toEqual(['dir.prom', 'fifo.prom']); // refused before the warehouse was opened
    } finally {
      tmp.cleanup();
    }
  }, 90_000);
});
