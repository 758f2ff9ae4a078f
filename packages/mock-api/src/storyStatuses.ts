/**
 * The status phase of a patient's story (storyPatient.ts): the `patientStatus` changes
 * after the reaching call along the funnel, or the edge-case histories of the roles
 * (late, regressions, repeats, an unknown status), or an archive after failed calls.
 *
 * @module
 */
import type { Rng } from './prng.js';
import { clamp, DAY, days, HOUR, MIN } from './storyCommon.js';
import type { ContactResult } from './storyContacts.js';
import type { PatientStory } from './storyCommon.js';

/** One planned status change. */
export interface PlannedStatus {
  status: string;
  /** Domain time (`statusChangedTime`), epoch ms. */
  at: number;
  /** Extra publication delay, ms: the change is published after later ones (a backfill). */
  lateBy?: number;
}

/** The natural next status and the gap before it; `''` ends the path. */
function naturalStep(rng: Rng, cur: string): { next: string; gap: number } | undefined {
  switch (cur) {
    case 'potentialCandidate':
      return { next: rng.weighted(['preScreening', 'preScreenFailure', ''], [75, 5, 20]), gap: days(rng, 0, 2) };
    case 'preScreening':
      return { next: rng.weighted(['preScreenFailure', 'firstVisitScheduled', 'archive', ''], [30, 55, 3, 12]), gap: days(rng, 1, 10) };
    case 'firstVisitScheduled':
      return { next: rng.weighted(['inScreening', 'archive', ''], [75, 10, 15]), gap: days(rng, 3, 14) };
    case 'inScreening':
      return { next: rng.weighted(['screenFailure', 'enrolled', ''], [28, 57, 15]), gap: days(rng, 7, 28) };
    case 'enrolled':
      return { next: rng.weighted(['completed', 'discontinued', ''], [8, 10, 82]), gap: days(rng, 30, 90) };
    default:
      return undefined;
  }
}

/**
 * Plans the patient's status changes in domain-time order (emitted by the caller).
 *
 * @param contact how the contact attempts ended
 */
export function statusHistory(p: PatientStory, contact: ContactResult): PlannedStatus[] {
  const { rng, role } = p;
  const { reachAt, reachKind, gaveUpAt, attempts } = contact;
  const statuses: PlannedStatus[] = [];
  let at = reachAt !== undefined ? reachAt + clamp(rng.logNormal(6 * HOUR, 1), 10 * MIN, 3 * DAY) : 0;
  const push = (status: string, gap: number): void => {
    at += gap;
    statuses.push({ status, at });
  };
  const span = (lo: number, hi: number): number => days(rng, lo, hi);
  const natural = (from: string): void => {
    let cur = from;
    for (let guard = 0; guard < 8; guard++) {
      const step = naturalStep(rng, cur);
      if (step === undefined || !step.next) return;
      push(step.next, step.gap);
      cur = step.next;
    }
  };
  if (reachAt !== undefined) {
    if (role === 'late') {
      push('preScreening', 0);
      push('firstVisitScheduled', span(1, 6));
      push('inScreening', span(3, 10));
      const fvs = statuses[statuses.length - 2]!;
      fvs.lateBy = at - fvs.at + span(2, 6);
      if (rng.chance(0.5)) natural('inScreening');
    } else if (role === 'regression') {
      push('preScreening', 0);
      push('firstVisitScheduled', span(1, 6));
      push('inScreening', span(3, 10));
      push('screenFailure', span(7, 20));
      push('inScreening', span(2, 10));
      if (rng.chance(0.5)) push('enrolled', span(7, 20));
    } else if (role === 'regressionPre') {
      push('preScreening', 0);
      push('preScreenFailure', span(1, 5));
      push('preScreening', span(1, 5));
      if (rng.chance(0.5)) push('firstVisitScheduled', span(2, 8));
    } else if (role === 'repeated') {
      push('preScreening', 0);
      push('preScreening', rng.int(1, 6) * HOUR);
      natural('preScreening');
    } else if (role === 'unknownStatus') {
      push('preScreening', 0);
      push('awaitingMedicalRecords', span(1, 3));
      if (rng.chance(0.6)) natural('preScreening');
    } else if (reachKind === 'notInterested') {
      if (rng.chance(0.5)) push('archive', span(1, 5));
    } else {
      const s0 = at;
      natural('potentialCandidate');
      if (statuses[0] !== undefined) {
        // The first change happens shortly after the reaching call.
        const shift = statuses[0].at - s0;
        for (const s of statuses) s.at -= shift;
      }
    }
  } else if (gaveUpAt !== undefined && attempts >= 3 && rng.chance(0.35)) {
    at = gaveUpAt;
    push('archive', span(3, 14));
  } else if (attempts === 0 && rng.chance(0.04)) {
    at = p.createdAt;
    push('archive', span(20, 40));
  }
  return statuses;
}
