/**
 * The operator's enrolment targets (`--trial-targets`, docs/models.md "Trial targets"): loaded
 * as seed_trial_targets into mart_enrolment_forecast, a changed file rebuilds the models, and a
 * bad value is exit 2 naming its line and column, committing nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { runTransform } from '../../../src/transform/runTransform.js';
import { validateTrialTargets } from '../../../src/transform/seeds.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { builtWarehouse, simulatorRows } from '../../helpers/warehouses.js';
import { tempDir } from '../../helpers/tmp.js';

describe("enrolment targets from the operator's CSV (--trial-targets)", () => {
  const tmp = tempDir('recruit-etl-targets-');
  let wh: Warehouse;

  beforeAll(async () => {
    wh = await builtWarehouse(':memory:', await simulatorRows());
  }, 60_000);
  afterAll(async () => {
    await wh?.close();
    tmp.cleanup();
  });

  const forecast = async (): Promise<Record<string, unknown>[]> =>
    wh.all(`select trial_id, enrolled_to_date::int as enrolled, enrolment_target::int as target, target_date::varchar as target_date,
        target_reached_on_p10 <= target_reached_on_p50 and target_reached_on_p50 <= target_reached_on_p90 as ordered,
        probability_target_met_by_target_date as probability, target_reached_on_p10::varchar as p10, target_reached_on_p90::varchar as p90,
        cast(as_of_at as date)::varchar as as_of_date
      from main.mart_enrolment_forecast order by trial_id`);

  test('without a file: every trial forecast, no target columns', async () => {
    const rows = await forecast();
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect([r['target'], r['target_date'], r['p10'], r['probability']]).toEqual([null, null, null, null]);
  });

  test('targets in another column order with an extra column; a changed file rebuilds the models', async () => {
    const trials = (await forecast()).map((r) => ({ id: r['trial_id'] as string, enrolled: r['enrolled'] as number }));
    const file = join(tmp.dir, 'targets.csv');
    // the first trial already reached its target; the second has one far ahead without a date
    writeFileSync(
      file,
      [
        'notes,target_date,enrolment_target,trial_id',
        `reached,2026-01-31,${trials[0]!.enrolled},${trials[0]!.id}`,
        `ahead,,${trials[1]!.enrolled + 40},"${trials[1]!.id}"`,
        '',
      ].join('\n'),
    );
    const result = await runTransform(wh, { trialTargets: file });
    expect(result.fullReason).toBe('models or seeds changed');
    const [reached, ahead] = await forecast();
    expect(reached).toMatchObject({ target: trials[0]!.enrolled, target_date: '2026-01-31', probability: 1, ordered: true });
    expect(reached!['p10']).toBe(reached!['as_of_date']);
    expect(ahead).toMatchObject({ target: trials[1]!.enrolled + 40, target_date: null, probability: null, ordered: true });
    expect((ahead!['p10'] as string) > (ahead!['as_of_date'] as string)).toBe(true);
    // the same file again: nothing changed, incremental
    expect((await runTransform(wh, { trialTargets: file })).mode).toBe('incremental');
    writeFileSync(file, ['trial_id,enrolment_target,target_date', `${trials[1]!.id},${trials[1]!.enrolled + 41},`, ''].join('\n'));
    expect((await runTransform(wh, { trialTargets: file })).fullReason).toBe('models or seeds changed');
    expect((await forecast())[1]).toMatchObject({ target: trials[1]!.enrolled + 41 });
  }, 60_000);

  test.each([
    ['trial_id,enrolment_target,target_date\nT1,12,2026-02-30\n', 'line 2, column target_date: not empty and not a date YYYY-MM-DD'],
    [
      'trial_id,enrolment_target,target_date\nT1,12,\nT2,1.5,\n',
      'line 3, column enrolment_target: not a whole number from 1 to 1000000000',
    ],
    ['trial_id,enrolment_target,target_date\nT1,0,\n', 'line 2, column enrolment_target: not a whole number from 1 to 1000000000'],
    ['trial_id,enrolment_target,target_date\n\nT1,3,\nT1,4,\n', 'line 4, column trial_id: the trial is already on line 3'],
    ['trial_id,enrolment_target,target_date\n,3,\n', 'line 2, column trial_id: empty'],
    ['trial_id,enrolment_target,target_date\nT1,3\n', 'line 2: 2 fields where the header has 3'],
    ['trial_id,enrolment_target,target_date\n"T1,3,\n', 'line 2: a quoted field is not closed on its line'],
  ])('a bad value is named by line and column: %j', (text, message) => {
    expect(() => validateTrialTargets(text)).toThrow(message);
  });

  test('a bad file is exit 2 (ConfigError) naming the option, file, line and column, and commits nothing', async () => {
    const before = await forecast();
    const file = join(tmp.dir, 'bad.csv');
    writeFileSync(file, 'trial_id,enrolment_target,target_date\nT1,ten,\n');
    const err = await runTransform(wh, { trialTargets: file }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as Error).message).toBe(
      `--trial-targets ${file}: line 2, column enrolment_target: not a whole number from 1 to 1000000000`,
    );
    const missing = join(tmp.dir, 'short.csv');
    writeFileSync(missing, 'trial_id,enrolment_target\nT1,3\n');
    await expect(runTransform(wh, { trialTargets: missing })).rejects.toThrow(
      `--trial-targets ${missing}: the header lacks column(s) target_date`,
    );
    expect(await forecast()).toEqual(before);
  });
});
