import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  COMMENT_UPDATED,
  CONTACT_ATTEMPT_CREATED,
  PATIENT_CONTACT_ATTEMPT_CREATED,
  PATIENT_CREATED,
  PATIENT_CREATED_V2,
  STATUS_CHANGED,
  SUBJECT_ID_UPDATED,
} from '../../../packages/mock-api/src/eventTypes.js';
import { generateStory, type StoryOptions } from '../../../packages/mock-api/src/story.js';
import { deriveTruth } from '../../../packages/mock-api/src/truth.js';
import type { EdgeCase } from '../../../packages/mock-api/src/types.js';

const DEFAULTS: StoryOptions = {
  seed: 1,
  trials: 2,
  sitesPerTrial: 4,
  patientsPerTrial: 150,
  startTimeMs: Date.parse('2026-01-05T08:00:00.000Z'),
  drift: true,
};

const story = generateStory(DEFAULTS);
const truth = deriveTruth(story.events);

const ENVELOPE_KEYS = new Set(['id', 'publishedTime', 'eventType', 'name', 'message']);

describe('story data set', () => {
  it('is deterministic: same options give byte-identical events', () => {
    const again = generateStory(DEFAULTS);
    expect(JSON.stringify(again.events)).toBe(JSON.stringify(story.events));
    expect(JSON.stringify(again.sites)).toBe(JSON.stringify(story.sites));
  });

  it('changes with the seed', () => {
    const other = generateStory({ ...DEFAULTS, seed: 2 });
    expect(other.events[0]!.id).not.toBe(story.events[0]!.id);
    expect(JSON.stringify(other.events.map((e) => e.envelope['message']))).not.toBe(
      JSON.stringify(story.events.map((e) => e.envelope['message'])),
    );
  });

  it('has unique event ids and one patient per trial × subject', () => {
    expect(new Set(story.events.map((e) => e.id)).size).toBe(story.events.length);
    expect(truth.patients.length).toBe(300);
    expect(story.trialIds).toEqual(['TRIAL-001', 'TRIAL-002']);
  });

  it('contains every edge case at least three times', () => {
    const all: EdgeCase[] = [
      'late-status',
      'regression',
      'repeated-status',
      'orphan',
      'unknown-status',
      'unknown-outcome',
      'both-spellings',
      'duplicate-delivery',
      'several-sites',
    ];
    for (const edge of all) {
      const n = truth.patients.filter((p) => p.edgeCases.includes(edge)).length;
      expect(n, edge).toBeGreaterThanOrEqual(3);
    }
  });

  it('keeps the first referral at startTime and publishes roughly in domain order', () => {
    const first = story.events[0]!;
    expect(first.eventType).toBe(PATIENT_CREATED);
    expect((first.envelope['message'] as Record<string, unknown>)['referralReceivedTime']).toBe('2026-01-05T08:00:00.000Z');
    for (const e of story.events) expect(e.publishedTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('marks a late status that comes after a status with a later domain time', () => {
    const p = truth.patients.find((x) => x.edgeCases.includes('late-status'))!;
    const late = p.statuses.find((s) => s.late)!;
    const pos = (id: string): number => story.events.findIndex((e) => e.id === id);
    const laterDomainEarlierInStream = p.statuses.some((s) => s.at > late.at && pos(s.eventId) < pos(late.eventId));
    expect(laterDomainEarlierInStream).toBe(true);
    expect(p.currentStatus).toBe(p.statuses[p.statuses.length - 1]!.status);
    expect(p.currentStatus).not.toBe(late.status);
  });

  it('orphans have events but no created event (neither v1 nor v2)', () => {
    const orphans = truth.patients.filter((p) => p.edgeCases.includes('orphan'));
    for (const o of orphans) {
      const evs = story.events.filter((e) => e.referralSubjectId === o.referralSubjectId && e.trialId === o.trialId);
      expect(evs.length).toBeGreaterThan(0);
      expect(evs.some((e) => e.eventType === PATIENT_CREATED || e.eventType === PATIENT_CREATED_V2)).toBe(false);
      expect(o.hasCreatedEvent).toBe(false);
    }
  });

  it('duplicate deliveries share a contactAttemptId under different event ids, sometimes both spellings', () => {
    const dups = truth.contactAttempts.filter((c) => c.eventIds.length > 1);
    expect(dups.length).toBeGreaterThanOrEqual(3);
    for (const d of dups) expect(new Set(d.eventIds).size).toBe(d.eventIds.length);
    expect(dups.some((d) => d.spellings.length === 2)).toBe(true);
    const spellings = new Set(story.events.map((e) => e.eventType));
    expect(spellings.has(CONTACT_ATTEMPT_CREATED) && spellings.has(PATIENT_CONTACT_ATTEMPT_CREATED)).toBe(true);
  });

  it('has a late v2.patient.created backfill for every created patient, v1 fields plus one', () => {
    const v1 = story.events.filter((e) => e.eventType === PATIENT_CREATED);
    const v2 = story.events.filter((e) => e.eventType === PATIENT_CREATED_V2);
    expect(v2.length).toBe(v1.length);
    const firstV2 = story.events.findIndex((e) => e.eventType === PATIENT_CREATED_V2);
    expect(firstV2).toBeGreaterThan(story.events.length / 2);
    const m1 = v1[0]!.envelope['message'] as Record<string, unknown>;
    const twin = v2.find((e) => e.referralSubjectId === v1[0]!.referralSubjectId)!;
    const m2 = twin.envelope['message'] as Record<string, unknown>;
    for (const k of ['referralReceivedTime', 'createdTime', 'siteId', 'trialId', 'referralSubjectId', 'patientStatus'])
      expect(m2[k]).toEqual(m1[k]);
    expect(Object.keys(m2)).toContain('referralSource');
    expect(Date.parse(twin.publishedTime) - Date.parse(m2['createdTime'] as string)).toBeGreaterThan(7 * 86_400_000);
  });

  it('with drift: name-keyed envelopes, unknown keys and unknown types occur', () => {
    expect(story.events.filter((e) => e.typeKey === 'name').length).toBeGreaterThanOrEqual(10);
    for (const e of story.events.filter((x) => x.typeKey === 'name')) {
      expect(e.envelope['name']).toBe(e.eventType);
      expect('eventType' in e.envelope).toBe(false);
    }
    expect(story.events.some((e) => Object.keys(e.envelope).some((k) => !ENVELOPE_KEYS.has(k)))).toBe(true);
    expect(story.events.some((e) => e.eventType === SUBJECT_ID_UPDATED)).toBe(true);
    expect(story.events.some((e) => e.eventType === COMMENT_UPDATED)).toBe(true);
    const statusKeys = ['statusChangedTime', 'siteId', 'trialId', 'referralSubjectId', 'patientStatus'];
    expect(
      story.events.some(
        (e) => e.eventType === STATUS_CHANGED && Object.keys(e.envelope['message'] as object).some((k) => !statusKeys.includes(k)),
      ) || story.events.some((e) => Object.keys(e.envelope['message'] as object).includes('updatedBy')),
    ).toBe(true);
  });

  it('without drift: only eventType, no unknown keys or types, but both spellings', () => {
    const plain = generateStory({ ...DEFAULTS, drift: false });
    expect(
      plain.events.every((e) => e.typeKey === 'eventType' && Object.keys(e.envelope).every((k) => ENVELOPE_KEYS.has(k) && k !== 'name')),
    ).toBe(true);
    expect(plain.events.some((e) => e.eventType === SUBJECT_ID_UPDATED || e.eventType === COMMENT_UPDATED)).toBe(false);
    const types = new Set(plain.events.map((e) => e.eventType));
    expect(types.has(CONTACT_ATTEMPT_CREATED) && types.has(PATIENT_CONTACT_ATTEMPT_CREATED)).toBe(true);
    const extra = ['updatedBy', 'sourceChannel', 'tags', 'notes'];
    expect(plain.events.some((e) => Object.keys(e.envelope['message'] as object).some((k) => extra.includes(k)))).toBe(false);
  });

  it('site lists use another id namespace, bridged by sponsorSiteId', () => {
    for (const trialId of story.trialIds) {
      const sites = story.sites[trialId]!;
      expect(sites.length).toBe(4);
      expect(sites.some((s) => s.record.address2 === null)).toBe(true);
      const eventSiteIds = new Set(
        story.events.filter((e) => e.trialId === trialId).map((e) => (e.envelope['message'] as Record<string, unknown>)['siteId']),
      );
      for (const s of sites) {
        expect(eventSiteIds.has(s.record.siteId)).toBe(false);
        expect(s.record.sponsorSiteId).toBe(s.sponsorSiteId);
      }
      for (const p of truth.patients.filter((x) => x.trialId === trialId && x.hasCreatedEvent)) {
        const site = sites.find((s) => s.eventSiteId === p.siteId)!;
        expect(p.sponsorSiteId).toBe(site.record.sponsorSiteId);
      }
    }
  });

  it('funnel is realistic: many stay referred, some fail, a few enroll', () => {
    const count = (s: string): number => truth.patients.filter((p) => p.statuses.some((x) => x.status === s)).length;
    expect(count('potentialCandidate')).toBeGreaterThan(250);
    expect(count('preScreening')).toBeGreaterThan(40);
    expect(count('preScreenFailure')).toBeGreaterThan(10);
    expect(count('enrolled')).toBeGreaterThan(5);
    expect(count('enrolled')).toBeLessThan(count('preScreening'));
    const never = truth.patients.filter((p) => p.contactAttemptIds.length === 0).length;
    expect(never).toBeGreaterThan(5);
  });
});

describe('story bytes are pinned', () => {
  // sha256 of JSON.stringify(generateStory(...)): a change here changes every data set
  // generated from these seeds; update the hashes only for an intended data change.
  it.each([
    [{ ...DEFAULTS }, 1933, '06ba1e8c853edc13a72f58224327ab472b2fc9e667e32a7139b9f91379ff62ba'],
    [{ ...DEFAULTS, seed: 7, patientsPerTrial: 120 }, 1591, '1627b04f526dbd178cd051298c4621555e233c72e162782eb4eecffba3370a51'],
    [
      { ...DEFAULTS, seed: 3, trials: 3, sitesPerTrial: 1, patientsPerTrial: 40, drift: false },
      846,
      'f4f60cc41ecfa4aa6460d0970830dbf0a146a1f22c39d58f5840d1121911f0b3',
    ],
  ] as const)('%o', (options, events, sha256) => {
    const s = generateStory(options);
    expect(s.events.length).toBe(events);
    expect(createHash('sha256').update(JSON.stringify(s)).digest('hex')).toBe(sha256);
  });
});
