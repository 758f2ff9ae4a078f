import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'prom-client';
import { readSeries, writeMetricsFile, type CommandOutcome } from '../../../src/metrics/metricsFile.js';
import { tempDir } from '../../helpers/tmp.js';

const outcome = (o: Partial<CommandOutcome>): CommandOutcome => ({
  command: 'run',
  exitCode: 0,
  startedAt: new Date('2026-11-23T02:00:00Z'),
  finishedAt: new Date('2026-11-23T02:01:30Z'),
  eventsLoaded: 10,
  ...o,
});

describe('the metrics file', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  afterEach(() => tmp?.cleanup());

  it('adds events to the counter, keeps the last success through a failure, and leaves the global registry alone', async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    await writeMetricsFile(path, outcome({}));
    await writeMetricsFile(path, outcome({ exitCode: 4, eventsLoaded: 5, finishedAt: new Date('2026-11-24T02:00:10Z'), startedAt: new Date('2026-11-24T02:00:00Z') }));
    await writeMetricsFile(path, outcome({ command: 'export', eventsLoaded: 0 }));
    const m = readSeries(readFileSync(path, 'utf8'));
    expect(m.get('recruit_etl_events_loaded_total')).toEqual(new Map([['run', 15], ['export', 0]]));
    expect(m.get('recruit_etl_last_exit_code')!.get('run')).toBe(4);
    expect(m.get('recruit_etl_last_success_timestamp_seconds')!.get('run')).toBe(Date.parse('2026-11-23T02:01:30Z') / 1000);
    expect(m.get('recruit_etl_last_run_timestamp_seconds')!.get('run')).toBe(Date.parse('2026-11-24T02:00:10Z') / 1000);
    expect(m.get('recruit_etl_last_run_duration_seconds')!.get('run')).toBe(10);
    expect(await register.metrics()).not.toContain('recruit_etl');
  });

  it('a previous file that is not the text format is replaced, with a warning', async () => {
    tmp = tempDir();
    const path = join(tmp.dir, 'm.prom');
    writeFileSync(path, 'recruit_etl_last_exit_code{command="run" 3\n');
    const warnings: string[] = [];
    await writeMetricsFile(path, outcome({ exitCode: 0 }), undefined, (w) => warnings.push(w));
    expect(warnings).toHaveLength(1);
    expect(readSeries(readFileSync(path, 'utf8')).get('recruit_etl_last_exit_code')).toEqual(new Map([['run', 0]]));
  });
});
