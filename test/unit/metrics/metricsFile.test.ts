import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'prom-client';
import {
  METRICS,
  MetricsFileError,
  readSeries,
  writeMetricsFile,
  type CommandOutcome,
  type Series,
} from '../../../src/metrics/metricsFile.js';
import type { WarehouseSeries } from '../../../src/metrics/warehouseSeries.js';
import { readerModes } from '../../../src/fs/readerFiles.js';
import { tempDir } from '../../helpers/tmp.js';

const outcome = (o: Partial<CommandOutcome>): CommandOutcome => ({
  command: 'run',
  exitCode: 0,
  startedAt: new Date('2026-11-23T02:00:00Z'),
  finishedAt: new Date('2026-11-23T02:01:30Z'),
  eventsLoaded: 10,
  ...o,
});
const MODES = readerModes(0o644);
const t = (iso: string): number => Date.parse(iso) / 1000;

/** Values of `name` by the value of `label`. */
const by = (m: Series, name: string, label = 'command'): Map<string, number> =>
  new Map((m.get(name) ?? []).map((s) => [s.labels[label] ?? '', s.value]));

const warehouse = (o: Partial<WarehouseSeries> = {}): WarehouseSeries => ({
  readAt: new Date('2026-11-23T02:01:29Z'),
  lastSuccessfulRunSeconds: t('2026-11-22T02:01:00Z'),
  lastSuccessfulExtractSeconds: t('2026-11-22T02:00:50Z'),
  newestEventPublishedSeconds: t('2026-11-23T01:59:00Z'),
  streams: [
    { streamId: 'a1b2', active: true, events: 1200, quarantined: 2, lastPolledSeconds: t('2026-11-23T02:00:30Z') },
    { streamId: 'old9', active: false, events: 40, quarantined: 0, lastPolledSeconds: t('2026-10-01T00:00:00Z') },
  ],
  dataQuality: { dq_orphan_events: 3, dq_duplicate_statuses: 0 },
  ...o,
});

describe('the metrics file', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  afterEach(() => tmp?.cleanup());

  it('adds events to the counter, keeps the last success through a failure, and leaves the global registry alone', async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    await writeMetricsFile(path, outcome({ stageSeconds: { extract: 60, transform: 20.5 } }), MODES);
    await writeMetricsFile(
      path,
      outcome({
        exitCode: 4,
        eventsLoaded: 5,
        finishedAt: new Date('2026-11-24T02:00:10Z'),
        startedAt: new Date('2026-11-24T02:00:00Z'),
        stageSeconds: { extract: 10 },
      }),
      MODES,
    );
    await writeMetricsFile(path, outcome({ command: 'export', eventsLoaded: 0, stageSeconds: { export: 3 } }), MODES);
    const m = readSeries(readFileSync(path, 'utf8'));
    expect(by(m, 'recruit_etl_events_loaded_total')).toEqual(
      new Map([
        ['run', 15],
        ['export', 0],
      ]),
    );
    expect(by(m, 'recruit_etl_last_exit_code').get('run')).toBe(4);
    expect(by(m, 'recruit_etl_last_success_timestamp_seconds').get('run')).toBe(t('2026-11-23T02:01:30Z'));
    expect(by(m, 'recruit_etl_last_run_timestamp_seconds').get('run')).toBe(t('2026-11-24T02:00:10Z'));
    expect(by(m, 'recruit_etl_last_run_duration_seconds').get('run')).toBe(10);
    // Stage durations of the command's last run only: the failed run had no transform.
    expect(
      (m.get('recruit_etl_stage_duration_seconds') ?? []).map((s) => [s.labels['command'], s.labels['stage'], s.value]).sort(),
    ).toEqual([
      ['export', 'export', 3],
      ['run', 'extract', 10],
    ]);
    expect(await register.metrics()).not.toContain('recruit_etl');
    expect(statSync(path).mode & 0o777).toBe(0o644);
  });

  it('a second write of one invocation (exit 0, then the run failed after) replaces the first: events counted once, no success', async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    await writeMetricsFile(path, outcome({ eventsLoaded: 10 }), MODES);
    const before = readSeries(readFileSync(path, 'utf8'));
    const base = await writeMetricsFile(path, outcome({ eventsLoaded: 500, finishedAt: new Date('2026-11-24T02:01:30Z') }), MODES);
    await writeMetricsFile(
      path,
      outcome({ exitCode: 7, eventsLoaded: 500, finishedAt: new Date('2026-11-24T02:01:31Z') }),
      MODES,
      undefined,
      base,
    );
    const m = readSeries(readFileSync(path, 'utf8'));
    expect(by(m, 'recruit_etl_events_loaded_total').get('run')).toBe(510);
    expect(by(m, 'recruit_etl_last_exit_code').get('run')).toBe(7);
    expect(by(m, 'recruit_etl_last_success_timestamp_seconds').get('run')).toBe(
      by(before, 'recruit_etl_last_success_timestamp_seconds').get('run'),
    );
  });

  it("carries the warehouse's series, keeps them when the warehouse was not read, and folds in this run's success", async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    await writeMetricsFile(path, outcome({ warehouse: warehouse() }), MODES);
    let m = readSeries(readFileSync(path, 'utf8'));
    // This run succeeded: etl.runs records it after the file is written, so the file says so itself.
    expect(by(m, 'recruit_etl_last_successful_run_timestamp_seconds', '').get('')).toBe(t('2026-11-23T02:01:30Z'));
    expect(by(m, 'recruit_etl_last_successful_extract_timestamp_seconds', '').get('')).toBe(t('2026-11-23T02:01:30Z'));
    expect(by(m, 'recruit_etl_newest_event_published_timestamp_seconds', '').get('')).toBe(t('2026-11-23T01:59:00Z'));
    expect(by(m, 'recruit_etl_stream_events_total', 'stream_id')).toEqual(
      new Map([
        ['a1b2', 1200],
        ['old9', 40],
      ]),
    );
    expect(by(m, 'recruit_etl_stream_quarantined_events_total', 'stream_id')).toEqual(
      new Map([
        ['a1b2', 2],
        ['old9', 0],
      ]),
    );
    // Only active streams have a cursor the runs move.
    expect(by(m, 'recruit_etl_stream_last_poll_timestamp_seconds', 'stream_id')).toEqual(new Map([['a1b2', t('2026-11-23T02:00:30Z')]]));
    expect(by(m, 'recruit_etl_cursor_age_seconds', '').get('')).toBe(60);
    expect(by(m, 'recruit_etl_data_quality_findings', 'check')).toEqual(
      new Map([
        ['dq_orphan_events', 3],
        ['dq_duplicate_statuses', 0],
      ]),
    );

    // Exit 5 on the lock an hour later: no warehouse read; its series stay, the cursor age grows.
    await writeMetricsFile(
      path,
      outcome({
        command: 'transform',
        exitCode: 5,
        eventsLoaded: 0,
        startedAt: new Date('2026-11-23T03:01:30Z'),
        finishedAt: new Date('2026-11-23T03:01:30Z'),
      }),
      MODES,
    );
    m = readSeries(readFileSync(path, 'utf8'));
    expect(by(m, 'recruit_etl_warehouse_read_timestamp_seconds', '').get('')).toBe(t('2026-11-23T02:01:29Z'));
    expect(by(m, 'recruit_etl_stream_events_total', 'stream_id').get('a1b2')).toBe(1200);
    expect(by(m, 'recruit_etl_data_quality_findings', 'check').get('dq_orphan_events')).toBe(3);
    expect(by(m, 'recruit_etl_cursor_age_seconds', '').get('')).toBe(3660);
    expect(by(m, 'recruit_etl_last_successful_run_timestamp_seconds', '').get('')).toBe(t('2026-11-23T02:01:30Z'));
    expect(by(m, 'recruit_etl_last_exit_code')).toEqual(
      new Map([
        ['run', 0],
        ['transform', 5],
      ]),
    );
  });

  it('uses Prometheus names: units in the name, _total only on counters, timestamps in seconds', () => {
    for (const f of Object.values(METRICS)) {
      expect(f.name).toMatch(/^recruit_etl_[a-z][a-z0-9_]*[a-z]$/);
      expect(f.name.endsWith('_total'), f.name).toBe(f.kind === 'counter');
      if (f.name.includes('timestamp')) expect(f.name).toMatch(/_timestamp_seconds$/);
      if (/duration|age/.test(f.name)) expect(f.name).toMatch(/_seconds$/);
      expect(f.name).not.toMatch(/_(count|sum|bucket|milliseconds|ms)$/);
    }
  });

  it('a previous file that is not the text format is replaced, with a warning', async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    writeFileSync(path, 'recruit_etl_last_exit_code{command="run" 3\n');
    const warnings: string[] = [];
    await writeMetricsFile(path, outcome({ exitCode: 0 }), MODES, (w) => warnings.push(w));
    expect(warnings).toHaveLength(1);
    expect(by(readSeries(readFileSync(path, 'utf8')), 'recruit_etl_last_exit_code')).toEqual(new Map([['run', 0]]));
  });

  it('refuses a FIFO, a device, a folder or a link in its place, without opening or replacing it', async () => {
    tmp = tempDir();
    const fifo = join(tmp.dir, 'fifo.prom');
    execFileSync('mkfifo', [fifo]);
    const dir = join(tmp.dir, 'dir.prom');
    mkdirSync(dir);
    const link = join(tmp.dir, 'link.prom');
    symlinkSync('/dev/null', link);
    const cases: [string, RegExp][] = [
      [fifo, /is a FIFO \(named pipe\)/],
      [dir, /is a folder/],
      ['/dev/null', /is a character device/],
      [link, /symbolic link/],
    ];
    for (const [path, why] of cases) {
      // A FIFO opened for reading or writing would block this test until its timeout.
      const err = await writeMetricsFile(path, outcome({}), MODES).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, path).toBeInstanceOf(MetricsFileError);
      expect((err as Error).message).toMatch(why);
    }
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  }, 10_000);

  it('a folder it cannot write is a MetricsFileError with the code, and nothing is left behind', async () => {
    tmp = tempDir();
    // (As root a 0555 folder is writable: a folder under a regular file fails for everyone.)
    writeFileSync(join(tmp.dir, 'file'), '');
    const path = join(tmp.dir, 'file', 'm.prom');
    const err = await writeMetricsFile(path, outcome({}), MODES).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MetricsFileError);
    expect((err as Error).message).toMatch(/ENOTDIR|EEXIST/);
    expect(existsSync(path)).toBe(false);
  });
});
