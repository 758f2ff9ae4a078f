/**
 * Ground truth: the simulator's generated stream loaded straight into raw.events (one
 * stream, stream_position = index + 1), transformed, and compared patient by patient and
 * attempt by attempt with what the simulator knows it generated (packages/mock-api/src/truth.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startMockApi, type MockApi } from '../../../packages/mock-api/src/index.js';
import { runTransform, type TransformResult } from '../../../src/transform/runTransform.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { insertRawEventsSql } from './fixture.js';
import { truthRows } from '../../helpers/warehouses.js';

const ISO = `'%Y-%m-%dT%H:%M:%S.%gZ'`;

describe('models against the simulator ground truth', () => {
  let api: MockApi;
  let wh: Warehouse;
  let result: TransformResult;

  beforeAll(async () => {
    api = await startMockApi({ seed: 7, trials: 2, sitesPerTrial: 4, patientsPerTrial: 120 });
    wh = await Warehouse.open(':memory:', { threads: 2 });
    await wh.migrate();
    const rows = truthRows(api.truth);
    for (let i = 0; i < rows.length; i += 500) await wh.run(insertRawEventsSql(rows.slice(i, i + 500)));
    result = await runTransform(wh);
  });
  afterAll(async () => {
    await wh?.close();
    await api?.close();
  });

  test('one funnel row per truth patient, orphans included, with created facts, site and milestones', async () => {
    const got = await wh.all<Record<string, unknown>>(`
      select trial_id, referral_subject_id, has_created_event, site_id, sponsor_site_id,
        strftime(referral_received_at, ${ISO}) as referral_received_at,
        strftime(created_at, ${ISO}) as created_at,
        strftime(acknowledged_at, ${ISO}) as acknowledged_at,
        current_status, is_multi_site, contact_attempt_count::int as attempts, has_regression
      from main.fct_patient_funnel order by trial_id, referral_subject_id`);
    const want = [...api.truth.patients]
      .sort((a, b) => (a.trialId + '\u0000' + a.referralSubjectId < b.trialId + '\u0000' + b.referralSubjectId ? -1 : 1))
      .map((p) => ({
        trial_id: p.trialId,
        referral_subject_id: p.referralSubjectId,
        has_created_event: p.hasCreatedEvent,
        site_id: p.siteId,
        sponsor_site_id: p.sponsorSiteId ?? null,
        referral_received_at: p.referralReceivedTime ?? null,
        created_at: p.createdTime ?? null,
        acknowledged_at: p.acknowledgedTime ?? null,
        current_status: p.currentStatus ?? null,
        is_multi_site: p.siteIds.length > 1,
        attempts: p.contactAttemptIds.length,
        has_regression: p.edgeCases.includes('regression'),
      }));
    expect(want.length).toBeGreaterThan(200);
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
  });

  test('every edge case of the truth is present and flagged', async () => {
    const cases = new Set(api.truth.patients.flatMap((p) => p.edgeCases));
    for (const c of [
      'late-status',
      'regression',
      'repeated-status',
      'orphan',
      'unknown-status',
      'unknown-outcome',
      'both-spellings',
      'duplicate-delivery',
      'several-sites',
    ]) {
      expect(cases.has(c as never), c).toBe(true);
    }
    const flags = new Map(
      (
        await wh.all<{ k: string; orphan: boolean; backfilled: boolean; unmapped: boolean }>(
          `select trial_id || '/' || referral_subject_id as k, is_orphan as orphan, has_backfilled_events as backfilled, has_unmapped_status as unmapped from main.fct_patient_funnel`,
        )
      ).map((r) => [r.k, r]),
    );
    for (const p of api.truth.patients) {
      const f = flags.get(`${p.trialId}/${p.referralSubjectId}`)!;
      expect(f.orphan, p.referralSubjectId).toBe(p.edgeCases.includes('orphan'));
      expect(f.unmapped, p.referralSubjectId).toBe(p.edgeCases.includes('unknown-status'));
      if (p.edgeCases.includes('late-status')) expect(f.backfilled, p.referralSubjectId).toBe(true);
    }
  });

  test('status history: spells are the truth statuses with repeats collapsed, the last one current', async () => {
    const got = await wh.all<{ k: string; statuses: string[]; current: string }>(`
      select trial_id || '/' || referral_subject_id as k, list(patient_status order by spell_number) as statuses,
        arg_max(patient_status, spell_number) filter (where is_current) as current
      from main.fct_patient_status_history group by all order by k`);
    const want = api.truth.patients
      .filter((p) => p.statuses.length > 0)
      .map((p) => ({
        k: `${p.trialId}/${p.referralSubjectId}`,
        statuses: p.statuses.map((s) => s.status).filter((s, i, a) => i === 0 || a[i - 1] !== s),
        current: p.currentStatus!,
      }))
      .sort((a, b) => (a.k < b.k ? -1 : 1));
    expect(got).toEqual(want);
  });

  test('one contact attempt per truth attempt id, whatever the spellings and deliveries', async () => {
    const got = await wh.all<Record<string, unknown>>(`
      select contact_attempt_id, trial_id, referral_subject_id, site_id,
        contact_attempt_date::varchar as contact_attempt_date, strftime(created_at, ${ISO}) as created_at,
        contact_attempt_outcomes as outcomes, event_count::int as deliveries, event_types
      from main.fct_contact_attempts order by contact_attempt_id`);
    const want = [...api.truth.contactAttempts]
      .sort((a, b) => (a.contactAttemptId < b.contactAttemptId ? -1 : 1))
      .map((c) => ({
        contact_attempt_id: c.contactAttemptId,
        trial_id: c.trialId,
        referral_subject_id: c.referralSubjectId,
        site_id: c.siteId,
        contact_attempt_date: c.contactAttemptDate,
        created_at: c.createdTime,
        outcomes: [...new Set(c.outcomes)],
        deliveries: c.eventIds.length,
        event_types: [...c.spellings].sort(),
      }));
    expect(got).toEqual(want);
  });

  test('dq reports the unknown outcomes, statuses and event types the simulator sends', () => {
    const dq = Object.fromEntries(result.dq.map((d) => [d.check, d.count]));
    expect(dq['dq_unmapped_outcomes']).toBeGreaterThan(0);
    expect(dq['dq_unmapped_statuses']).toBeGreaterThan(0);
    expect(dq['dq_orphan_events']).toBeGreaterThan(0);
    expect(dq['dq_invalid_events']).toBe(0);
  });
});
