import { describe, expect, it } from 'vitest';
import { expectedEvents } from '../../../packages/mock-api/src/truth.js';
import type { GroundTruth, TruthEvent } from '../../../packages/mock-api/src/types.js';

function ev(id: string, eventType: string, trialId: string, typeKey: 'eventType' | 'name' = 'eventType'): TruthEvent {
  return {
    id,
    eventType,
    typeKey,
    trialId,
    publishedTime: '2026-01-05T08:00:00.000Z',
    envelope: { id, [typeKey]: eventType, message: { trialId } },
  };
}

function truthOf(events: TruthEvent[], visible: number): GroundTruth {
  return { trialIds: ['T1', 'T2'], events, visibleCount: () => visible, patients: [], contactAttempts: [], sites: {} };
}

describe('expectedEvents', () => {
  const events = [
    ev('a', 'v1.patient.created', 'T1'),
    ev('b', 'v1.patient.created', 'T2'),
    ev('c', 'v2.patient.created', 'T1'),
    ev('d', 'v1.patient.statusChanged', 'T1', 'name'),
    ev('e', 'v1.patient.created', 'T1'),
  ];

  it('filters by type and trial in stream order, name-keyed envelopes matching on name', () => {
    const got = expectedEvents(truthOf(events, 5), { trialIds: ['T1'], eventTypes: ['v1.patient.created', 'v1.patient.statusChanged'] });
    expect(got.map((e) => e.id)).toEqual(['a', 'd', 'e']);
  });

  it('never returns a type that was not requested (v2 only when asked)', () => {
    expect(expectedEvents(truthOf(events, 5), { trialIds: ['T1', 'T2'], eventTypes: ['v1.patient.created'] }).map((e) => e.id)).toEqual([
      'a',
      'b',
      'e',
    ]);
    expect(expectedEvents(truthOf(events, 5), { trialIds: ['T1'], eventTypes: ['v2.patient.created'] }).map((e) => e.id)).toEqual(['c']);
  });

  it('only counts visible events', () => {
    expect(expectedEvents(truthOf(events, 2), { trialIds: ['T1', 'T2'], eventTypes: ['v1.patient.created'] }).map((e) => e.id)).toEqual([
      'a',
      'b',
    ]);
    expect(expectedEvents(truthOf(events, 0), { trialIds: ['T1'], eventTypes: ['v1.patient.created'] })).toEqual([]);
  });
});
