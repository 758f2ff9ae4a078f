/**
 * The metrics file read by the real collector (docs/contracts.md "Metrics"): Debian's
 * `prometheus-node-exporter` 1.5 (package prometheus-node-exporter, `make node-exporter`)
 * runs as another user (`nobody`, through `setpriv`; the test runs as root), on a loopback
 * port, with only its textfile collector, pointed at a textfile folder laid out as the
 * recipe's (`/var/lib/prometheus/node-exporter`, under a scratch root). The built CLI runs a
 * job that writes its metrics there with the default `--metrics-file-mode`; a scrape of
 * `/metrics` must show the job's series and `node_textfile_scrape_error 0`. With
 * `--metrics-file-mode 0600` the collector cannot read the file: `node_textfile_scrape_error 1`.
 * Debian's `promtool check metrics` (package prometheus 2.42) finds nothing to say about the file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { MockApi } from '../../../packages/mock-api/src/index.js';
import { ROOT, runCli } from '../../helpers/cli.js';
import { envFor, startSim } from '../../helpers/sim.js';
import { tempDir } from '../../helpers/tmp.js';

const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';
const PROMTOOL = '/usr/bin/promtool';

/** A free loopback port (bound, then released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** GET `/metrics`, retried while the exporter starts (at most `ms`). */
async function scrape(port: number, ms = 10_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3_000) });
      if (res.ok) return await res.text();
    } catch (err) {
      if (Date.now() > until) throw err;
    }
    if (Date.now() > until) throw new Error('node_exporter did not answer');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The value of the sample `line` starts with (a metric name and its labels as written), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe(`Debian's node_exporter (${NODE_EXPORTER}) reads the metrics file as another user`, () => {
  let api: MockApi;
  let exporter: ChildProcess | undefined;
  let port = 0;
  let exporterLog = '';
  const tmp = tempDir('recruit-etl-node-exporter-');
  const textfile = join(tmp.dir, 'var', 'lib', 'prometheus', 'node-exporter');
  const metrics = join(textfile, 'recruit_etl.prom');
  const db = join(tmp.dir, 'db', 'warehouse.duckdb');
  const env = (extra: Record<string, string> = {}): Record<string, string> =>
    envFor(api, db, {
      RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports'),
      RECRUIT_ETL_METRICS_FILE: metrics,
      RECRUIT_ETL_LOG_LEVEL: 'warn',
      ...extra,
    });

  beforeAll(async () => {
    const version = spawnSync(NODE_EXPORTER, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    expect(`${version.stdout}${version.stderr}`, `${NODE_EXPORTER} is missing: make node-exporter`).toMatch(
      /node_exporter, version 1\.5\./,
    );
    // The scratch root is the test's (0700): nobody must reach the textfile folder through it.
    chmodSync(tmp.dir, 0o755);
    api = await startSim({ seed: 31, patientsPerTrial: 8 });
    port = await freePort();
    exporter = spawn(
      'setpriv',
      [
        '--reuid=nobody',
        '--regid=nogroup',
        '--clear-groups',
        '--',
        NODE_EXPORTER,
        `--web.listen-address=127.0.0.1:${port}`,
        '--collector.disable-defaults',
        '--collector.textfile',
        `--collector.textfile.directory=${textfile}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    exporter.stdout!.on('data', (d: Buffer) => (exporterLog += d.toString()));
    exporter.stderr!.on('data', (d: Buffer) => (exporterLog += d.toString()));
  }, 60_000);

  afterAll(async () => {
    if (exporter?.pid !== undefined && exporter.exitCode === null) {
      const gone = new Promise((r) => exporter!.once('close', r));
      exporter.kill('SIGTERM');
      // Bounded: a collector that ignores SIGTERM is killed after 5 s.
      const timer = setTimeout(() => exporter?.kill('SIGKILL'), 5_000);
      await gone;
      clearTimeout(timer);
    }
    await api?.close();
    tmp.cleanup();
  });

  it("finds the job's series and node_textfile_scrape_error 0 with the default mode (0644)", async () => {
    const started = Date.now() / 1000;
    const r = await runCli(['run'], env());
    expect(r.code, r.stderr).toBe(0);
    const ended = Date.now() / 1000;
    expect(statSync(metrics).mode & 0o777).toBe(0o644);
    const text = await scrape(port);
    // The collector runs as nobody, not as the job's user (root here).
    const owner = spawnSync('ps', ['-o', 'user=', '-p', String(exporter!.pid)], { encoding: 'utf8' }).stdout.trim();
    expect(owner).toBe('nobody');
    expect(sample(text, 'node_textfile_scrape_error'), exporterLog).toBe(0);
    expect(sample(text, 'recruit_etl_last_exit_code{command="run"}')).toBe(0);
    // Within this run, however long a loaded machine made it.
    for (const s of [
      'recruit_etl_last_successful_run_timestamp_seconds',
      'recruit_etl_last_successful_extract_timestamp_seconds',
      'recruit_etl_last_success_timestamp_seconds{command="run"}',
    ]) {
      expect(sample(text, s), s).toBeGreaterThanOrEqual(Math.floor(started));
      expect(sample(text, s), s).toBeLessThanOrEqual(Math.ceil(ended));
    }
    expect(sample(text, 'recruit_etl_newest_event_published_timestamp_seconds')).toBeGreaterThan(0);
    expect(sample(text, 'recruit_etl_cursor_age_seconds')).toBeLessThanOrEqual(Math.ceil(ended - started) + 1);
    expect(text).toMatch(/^recruit_etl_stream_events_total\{stream_id="[^"]+"\} [1-9]\d*$/m);
    expect(text).toMatch(/^recruit_etl_stream_quarantined_events_total\{stream_id="[^"]+"\} 0$/m);
    expect(text).toMatch(/^recruit_etl_data_quality_findings\{check="dq_[a-z_]+"\} \d+$/m);
    for (const stage of ['extract', 'transform', 'export', 'report']) {
      expect(sample(text, `recruit_etl_stage_duration_seconds{command="run",stage="${stage}"}`), stage).toBeGreaterThanOrEqual(0);
    }
    expect(text).toMatch(/^# TYPE recruit_etl_stream_events_total counter$/m);
    expect(text).toMatch(/^node_textfile_mtime_seconds\{file=".*recruit_etl\.prom"\} \d/m);
  }, 120_000);

  it("promtool check metrics (Debian's prometheus 2.42) accepts the file: promlint-clean names and units", () => {
    const version = spawnSync(PROMTOOL, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    expect(`${version.stdout}${version.stderr}`, `${PROMTOOL} is missing: make node-exporter`).toMatch(/promtool, version 2\./);
    const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: readFileSync(metrics), encoding: 'utf8', timeout: 10_000 });
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
    expect(check.status).toBe(0);
    // And it can fail: a gauge named as a counter is a finding.
    const bad = spawnSync(PROMTOOL, ['check', 'metrics'], {
      input: '# HELP x_total a\n# TYPE x_total gauge\nx_total 1\n',
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(bad.status).not.toBe(0);
  });

  it('the alert rules of docs/scheduling.md "Alerts" pass promtool check rules and name only series the file has', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'scheduling.md'), 'utf8');
    const section = doc.slice(doc.indexOf('\n## Alerts\n'));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml).toBeDefined();
    const rules = join(tmp.dir, 'rules.yml');
    writeFileSync(rules, yaml!);
    const check = spawnSync(PROMTOOL, ['check', 'rules', rules], { encoding: 'utf8', timeout: 10_000 });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expect(check.stdout).toMatch(/SUCCESS: 3 rules found/);
    const written = new Set(
      readFileSync(metrics, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('# TYPE '))
        .map((l) => l.split(' ')[2]),
    );
    for (const name of yaml!.match(/recruit_etl_[a-z_]+/g) ?? []) expect(written.has(name), name).toBe(true);
  });

  it('with --metrics-file-mode 0600 the collector cannot read it: node_textfile_scrape_error 1', async () => {
    const r = await runCli(['transform'], env({ RECRUIT_ETL_METRICS_FILE_MODE: '0600' }));
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(metrics).mode & 0o777).toBe(0o600);
    const text = await scrape(port);
    expect(sample(text, 'node_textfile_scrape_error')).toBe(1);
    expect(text).not.toMatch(/^recruit_etl_/m);
    expect(exporterLog).toMatch(/permission denied/);
    console.log(`node_exporter with a 0600 file: ${exporterLog.split('\n').filter((l) => /permission denied/.test(l))[0] ?? ''}`);
  }, 120_000);
});
