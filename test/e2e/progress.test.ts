/**
 * Progress and the run summary as an operator sees them (docs/contracts.md "Progress and
 * the run summary"): periodic progress lines in the JSON log while a slow stage runs, one
 * `run summary` JSON line, the per-stage durations in `etl.runs.stages`, no control
 * characters when stderr is not a terminal; a live display and a readable summary on a
 * terminal (a real pseudo-terminal, through util-linux `script`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseFaultSpec, type MockApi } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import type { RunSummary } from '../../src/log/progress.js';
import { CLI, logLines, runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

describe('progress and the run summary', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    // Every events page waits 100 ms: 20-event pages make an extract of a few seconds. One event
    // has a lone surrogate (quarantined) in the first run.
    api = await startSim({
      seed: 5,
      patientsPerTrial: 30,
      faults: [parseFaultSpec('events:latency=100:times=100000'), parseFaultSpec('events:loneSurrogate:after=3:event=5')],
    });
    tmp = tempDir();
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('not a terminal: periodic progress lines, one summary line, stages in etl.runs, no control characters', async () => {
    const db = join(tmp.dir, 'p.duckdb');
    const env = envFor(api, db, {
      RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'p-exports'),
      RECRUIT_ETL_PAGE_SIZE: '20',
      RECRUIT_ETL_PROGRESS_INTERVAL: '0.25',
    });
    const r = await runCli(['run'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(CONTROL);
    const lines = logLines(r.stdout);
    expect(lines.every((l) => !('raw' in l))).toBe(true);
    const progress = lines.filter((l) => l['msg'] === 'extract progress');
    expect(progress.length).toBeGreaterThanOrEqual(3);
    for (const p of progress) {
      expect(p['level']).toBe(30); // info: visible at the default level
      expect(p).toMatchObject({ stage: 'extract' });
      for (const k of ['pages', 'events', 'eventsPerSecond', 'elapsedMs']) expect(typeof p[k]).toBe('number');
      expect(p).toHaveProperty('position');
    }
    // The counts move between lines.
    const pages = progress.map((p) => p['pages'] as number);
    expect(pages[pages.length - 1]!).toBeGreaterThan(pages[0]!);
    expect(pages).toEqual([...pages].sort((a, b) => a - b));

    const summaries = lines.filter((l) => l['msg'] === 'run summary');
    expect(summaries).toHaveLength(1);
    const s = summaries[0]!['summary'] as RunSummary;
    expect(s.status).toBe('succeeded');
    expect(s.command).toBe('run');
    expect(Object.keys(s.stages)).toEqual(['extract', 'sites', 'transform', 'export', 'report']);
    expect(s.stages.extract!.durationMs).toBeGreaterThan(0);
    expect(s.stages.extract!['events']).toBeGreaterThan(0);
    expect(s.stages.transform!['models']).toBeGreaterThan(10);
    expect(s.stages.export!['files']).toBeGreaterThan(3);
    expect(s.stages.report!['trials']).toBe(2);
    expect(s.stages.report!['bytes']).toBeGreaterThan(10_000);
    expect(s.dqSource).toBe('this run');
    expect(s.dq).not.toBeNull();
    expect(s.quarantined).toBe(1); // the simulator's lone surrogate
    expect(s.cursorAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(s.cursorAgeSeconds).toBeLessThan(60);

    // The same per-stage durations are recorded in etl.runs.stages.
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const row = await wh.one<{ stages: string; run_id: string }>(
        "select run_id, stages::varchar as stages from etl.runs where command = 'run'",
      );
      expect(row!.run_id).toBe(s.runId);
      expect(JSON.parse(row!.stages)).toEqual(s.stages);
    } finally {
      await wh.close();
    }

    // A command with no transform reports the last transform's findings and the cursor's age.
    const ex = await runCli(['export'], env);
    expect(ex.code).toBe(0);
    const es = logLines(ex.stdout).find((l) => l['msg'] === 'run summary')!['summary'] as RunSummary;
    expect(Object.keys(es.stages)).toEqual(['export']);
    expect(es.dqSource).toBe('last transform');
    expect(es.dq).toEqual(s.dq);
  });

  it('a failed run ends with a summary too, its failed stage marked', async () => {
    const db = join(tmp.dir, 'f.duckdb');
    const r = await runCli(['extract'], envFor(api, db, { RECRUIT_ETL_CLIENT_SECRET: 'wrong-secret' }));
    expect(r.code).toBe(3);
    const s = logLines(r.stdout).find((l) => l['msg'] === 'run summary')!['summary'] as RunSummary;
    expect(s.status).toBe('failed');
    expect(s.stages.extract).toMatchObject({ failed: true });
    expect(s.error).toMatch(/token endpoint refused/);
    expect(JSON.stringify(s)).not.toContain('wrong-secret');
  });

  it('on a terminal: a live display and a readable summary on stderr', async () => {
    const db = join(tmp.dir, 't.duckdb');
    const env = envFor(api, db, {
      RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 't-exports'),
      RECRUIT_ETL_PAGE_SIZE: '20',
      RECRUIT_ETL_LOG_LEVEL: 'warn',
    });
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && v !== undefined) clean[k] = v;
    // `script` gives the command a pseudo-terminal as stdout and stderr (not spawnSync: the
    // simulator answers from this process).
    const r = await new Promise<{ status: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn('script', ['-qec', `${process.execPath} ${CLI} run`, '/dev/null'], {
        env: { ...clean, ...env, TERM: 'xterm', COLUMNS: '120' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('error', reject);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout });
      });
    });
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(out).toMatch(/extract\s+[\d,]+ events, [\d,]+ pages, [\d,]+ events\/s, position/);
    expect(out).toContain('\u001b['); // drawn and cleared in place
    expect(out).toMatch(/recruit-etl run succeeded in [\d.]+s \(run \d{8}T\d{6}Z-[0-9a-f]{6}\)/);
    expect(out).toMatch(/ {2}extract +[\d.]+s {2}pages \d+, events \d+/);
    expect(out).toMatch(/ {2}transform +[\d.]+s {2}models \d+/);
    expect(out).toContain('quarantined events: 0');
    expect(out).toMatch(/cursor age: \d+s/);
  });
});
