/**
 * The story data set: per trial, sites and patients whose recruitment stories (referral,
 * acknowledgement, contact attempts, status changes) become events, published into the
 * stream roughly in domain-time order (DOMAIN.md). Every default-size data set contains
 * the edge cases listed in {@link ROLE_PLAN}; the ground truth recomputes them from the
 * stream (truth.ts).
 *
 * @module
 */
import { eventIdAt } from './eventIds.js';
import {
  COMMENT_UPDATED,
  CONTACT_ATTEMPT_CREATED,
  PATIENT_CONTACT_ATTEMPT_CREATED,
  PATIENT_CREATED,
  PATIENT_CREATED_V2,
  REFERRAL_ACKNOWLEDGED,
  STATUS_CHANGED,
  SUBJECT_ID_UPDATED,
} from './eventTypes.js';
import { Rng } from './prng.js';
import { generateTrialSites, trialIdOf, type TrialSite } from './sites.js';
import type { TruthEvent } from './types.js';

/** Inputs of {@link generateStory}. */
export interface StoryOptions {
  seed: number;
  trials: number;
  sitesPerTrial: number;
  patientsPerTrial: number;
  /** First referral time, epoch ms. */
  startTimeMs: number;
  /** Envelope/message drift: `name` keys, unknown keys, unknown event types (spec §2.4, §9). */
  drift: boolean;
}

/** Output of {@link generateStory}. */
export interface GeneratedStory {
  trialIds: string[];
  sites: Record<string, TrialSite[]>;
  /** The whole stream in stream order; `events[i].id === eventIdAt(seed, i)`. */
  events: TruthEvent[];
}

type Role =
  | 'late'
  | 'regression'
  | 'regressionPre'
  | 'repeated'
  | 'orphan'
  | 'unknownStatus'
  | 'unknownOutcome'
  | 'bothSpellings'
  | 'duplicateDelivery'
  | 'severalSites';

/** Forced edge-case roles per trial, assigned round-robin (so small trials still get one of each). */
export const ROLE_PLAN: ReadonlyArray<readonly [Role, number]> = [
  ['late', 3],
  ['regression', 2],
  ['regressionPre', 1],
  ['repeated', 3],
  ['orphan', 3],
  ['unknownStatus', 3],
  ['unknownOutcome', 3],
  ['bothSpellings', 3],
  ['duplicateDelivery', 3],
  ['severalSites', 3],
];

interface Draft {
  publishAt: number;
  seq: number;
  trialId: string;
  type: string;
  message: Record<string, unknown>;
}

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const WINDOW_DAYS = 56;

const iso = (ms: number): string => new Date(ms).toISOString();
const dateOf = (ms: number): string => iso(ms).slice(0, 10);
const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** A time on the UTC day of `ms` during US business hours (13:00–23:00 UTC), not before `notBefore`. */
function workTime(rng: Rng, ms: number, notBefore: number): number {
  const day = Math.floor(ms / DAY) * DAY;
  const t = day + 13 * HOUR + rng.int(0, 10 * 60) * MIN + rng.int(0, 59) * 1000;
  return t > notBefore ? t : notBefore + rng.int(10, 120) * MIN;
}

function assignRoles(rng: Rng, patients: number, sites: number): Array<Role | undefined> {
  const roles: Array<Role | undefined> = new Array<Role | undefined>(patients).fill(undefined);
  const order = rng.shuffle(Array.from({ length: patients }, (_, i) => i));
  const queue: Role[] = [];
  const max = Math.max(...ROLE_PLAN.map(([, n]) => n));
  for (let round = 0; round < max; round++) {
    for (const [role, n] of ROLE_PLAN) {
      if (round < n && !(role === 'severalSites' && sites < 2)) queue.push(role);
    }
  }
  for (let i = 0; i < queue.length && i < order.length; i++) roles[order[i]!] = queue[i];
  return roles;
}

/**
 * Generates the story data set (DOMAIN.md; brief section 3). Deterministic in `options`.
 *
 * @returns trials, sites and the complete stream with envelopes ready to serialize
 */
export function generateStory(options: StoryOptions): GeneratedStory {
  const { seed, drift } = options;
  const trialIds: string[] = [];
  const sites: Record<string, TrialSite[]> = {};
  const drafts: Draft[] = [];
  let seq = 0;
  const createdDrafts: Array<{ draft: Draft; createdAt: number }> = [];

  for (let t = 0; t < options.trials; t++) {
    const trialId = trialIdOf(t + 1);
    trialIds.push(trialId);
    const trng = new Rng(seed, 100 + t);
    const trialSites = generateTrialSites(trng, t + 1, Math.max(1, options.sitesPerTrial));
    sites[trialId] = trialSites;
    const roles = assignRoles(trng, options.patientsPerTrial, trialSites.length);
    const referralTimes: number[] = [];
    for (let k = 0; k < options.patientsPerTrial; k++) {
      const day = trng.int(0, WINDOW_DAYS - 1);
      const minute = trng.chance(0.75) ? trng.int(12 * 60, 23 * 60 + 59) : trng.int(0, 24 * 60 - 1);
      referralTimes.push(options.startTimeMs + day * DAY + minute * MIN + trng.int(0, 59_999));
    }
    referralTimes.sort((a, b) => a - b);
    if (t === 0 && referralTimes.length > 0) referralTimes[0] = options.startTimeMs;
    const minRef = referralTimes[0] ?? options.startTimeMs;
    for (let k = 0; k < referralTimes.length; k++) {
      if (referralTimes[k]! < options.startTimeMs) referralTimes[k] = minRef;
    }

    for (let k = 0; k < options.patientsPerTrial; k++) {
      const rng = new Rng(seed, 1_000_000 + t * 100_000 + k);
      const drng = new Rng(seed, 5_000_000 + t * 100_000 + k);
      const role = roles[k];
      const rsid = `RS-${rng.base32(10)}`;
      let site = rng.weighted(trialSites, trialSites.map((s) => s.weight));
      const firstSite = site;
      const R = referralTimes[k]!;
      const createdAt = R + rng.int(5, 600) * 1000;
      const lag = (): number => clamp(rng.logNormal(3000, 1), 150, 120_000);
      const emit = (type: string, domainAt: number, message: Record<string, unknown>, extraLag = 0): Draft => {
        const d: Draft = { publishAt: Math.round(domainAt + lag() + extraLag), seq: seq++, trialId, type, message };
        drafts.push(d);
        return d;
      };
      const ids = (): Record<string, unknown> => ({ siteId: site.eventSiteId, trialId, referralSubjectId: rsid });
      let lastDomain = createdAt;

      if (role !== 'orphan') {
        const d = emit(PATIENT_CREATED, createdAt, {
          referralReceivedTime: iso(R),
          createdTime: iso(createdAt),
          siteId: firstSite.eventSiteId,
          trialId,
          referralSubjectId: rsid,
          patientStatus: 'potentialCandidate',
          sponsorSiteId: firstSite.sponsorSiteId,
        });
        createdDrafts.push({ draft: d, createdAt });
      }

      // Acknowledgement: hours to days later; some never.
      if (rng.chance(0.85)) {
        const ackAt = Math.round(createdAt + clamp(rng.logNormal(18 * HOUR, 1.1), 15 * MIN, 12 * DAY));
        emit(REFERRAL_ACKNOWLEDGED, ackAt, { referralAcknowledgedTime: iso(ackAt), ...ids() });
        lastDomain = Math.max(lastDomain, ackAt);
        if (rng.chance(0.03)) {
          const again = ackAt + rng.int(1, 48) * HOUR;
          emit(REFERRAL_ACKNOWLEDGED, again, { referralAcknowledgedTime: iso(again), ...ids() });
        }
      }

      // Contact attempts.
      const forceReach = role === 'late' || role === 'regression' || role === 'regressionPre' || role === 'repeated' || role === 'unknownStatus';
      const minAttempts =
        role === 'orphan' || role === 'duplicateDelivery' ? 1 : role === 'unknownOutcome' || role === 'bothSpellings' || role === 'severalSites' ? 2 : 0;
      let reachAt: number | undefined;
      let reachKind: 'reached' | 'notInterested' | undefined;
      let attempts = 0;
      let gaveUpAt: number | undefined;
      const noAttempts = minAttempts === 0 && !forceReach && rng.chance(0.12);
      if (!noAttempts) {
        const firstDelay = clamp(rng.logNormal(1.2 * DAY, 0.9), 30 * MIN, 14 * DAY);
        let attemptAt = workTime(rng, createdAt + firstDelay, createdAt + 10 * MIN);
        let spellingFlip = rng.chance(0.5);
        for (let a = 0; a < 6; a++) {
          let outcomes: string[];
          let stop = false;
          let reached = false;
          if (role === 'unknownOutcome' && a === 0) {
            outcomes = rng.chance(0.5) ? ['textMessageSent'] : ['noAnswer', 'textMessageSent'];
          } else if ((forceReach && a >= 1) || (a + 1 >= minAttempts && rng.chance(0.33))) {
            outcomes = forceReach
              ? rng.weighted([['reached'], ['reached', 'appointmentScheduled']], [1, 1])
              : rng.weighted([['reached'], ['reached', 'appointmentScheduled'], ['notInterested'], ['requestedCallBack']], [40, 30, 15, 15]);
            reached = outcomes[0] !== 'requestedCallBack';
            stop = reached;
          } else {
            outcomes = rng.weighted(
              [['noAnswer'], ['leftVoicemail'], ['noAnswer', 'leftVoicemail'], ['wrongNumber'], ['disconnectedNumber']],
              [45, 25, 22, 4, 4],
            );
            stop = (outcomes[0] === 'wrongNumber' || outcomes[0] === 'disconnectedNumber') && a + 1 >= minAttempts && !forceReach;
          }
          const enteredAt = rng.chance(0.8) ? attemptAt + rng.int(1, 40) * MIN : workTime(rng, attemptAt + DAY, attemptAt);
          const spelling =
            role === 'bothSpellings'
              ? (a + (spellingFlip ? 1 : 0)) % 2 === 0
                ? CONTACT_ATTEMPT_CREATED
                : PATIENT_CONTACT_ATTEMPT_CREATED
              : rng.chance(0.25)
                ? PATIENT_CONTACT_ATTEMPT_CREATED
                : CONTACT_ATTEMPT_CREATED;
          const message = {
            createdTime: iso(enteredAt),
            contactAttemptDate: dateOf(attemptAt),
            ...ids(),
            contactAttemptId: `ca_${rng.hex(20)}`,
            contactAttemptOutcomes: outcomes,
          };
          emit(spelling, enteredAt, message);
          if ((role === 'duplicateDelivery' && a === 0) || rng.chance(0.015)) {
            const other = spelling === CONTACT_ATTEMPT_CREATED ? PATIENT_CONTACT_ATTEMPT_CREATED : CONTACT_ATTEMPT_CREATED;
            spellingFlip = !spellingFlip;
            emit(rng.chance(0.5) ? other : spelling, enteredAt, { ...message, contactAttemptOutcomes: [...outcomes] }, rng.int(30, 3 * 3600) * 1000);
          }
          attempts++;
          lastDomain = Math.max(lastDomain, enteredAt);
          if (role === 'severalSites' && a === 0) {
            const others = trialSites.filter((s) => s !== site);
            if (others.length > 0) site = rng.pick(others);
          }
          if (reached) {
            reachAt = attemptAt;
            reachKind = outcomes[0] === 'notInterested' ? 'notInterested' : 'reached';
          }
          if (stop) break;
          if (!forceReach && a + 1 >= Math.max(minAttempts, 2) && rng.chance(0.2)) break;
          attemptAt = workTime(rng, attemptAt + rng.int(1, 4) * DAY, attemptAt + HOUR);
        }
        if (reachAt === undefined) gaveUpAt = attemptAt;
      }

      // Status changes along the funnel.
      const statuses: Array<{ status: string; at: number; lateBy?: number }> = [];
      let at = reachAt !== undefined ? reachAt + clamp(rng.logNormal(6 * HOUR, 1), 10 * MIN, 3 * DAY) : 0;
      const push = (status: string, gap: number, lateBy?: number): void => {
        at += gap;
        statuses.push(lateBy === undefined ? { status, at } : { status, at, lateBy });
      };
      const days = (lo: number, hi: number): number => rng.int(lo * 24, hi * 24) * HOUR + rng.int(0, 59) * MIN;
      const natural = (from: string): void => {
        let cur = from;
        for (let guard = 0; guard < 8; guard++) {
          let next: string | undefined;
          let gap = 0;
          if (cur === 'potentialCandidate') {
            next = rng.weighted(['preScreening', 'preScreenFailure', ''], [75, 5, 20]);
            gap = days(0, 2);
          } else if (cur === 'preScreening') {
            next = rng.weighted(['preScreenFailure', 'firstVisitScheduled', 'archive', ''], [30, 55, 3, 12]);
            gap = days(1, 10);
          } else if (cur === 'firstVisitScheduled') {
            next = rng.weighted(['inScreening', 'archive', ''], [75, 10, 15]);
            gap = days(3, 14);
          } else if (cur === 'inScreening') {
            next = rng.weighted(['screenFailure', 'enrolled', ''], [28, 57, 15]);
            gap = days(7, 28);
          } else if (cur === 'enrolled') {
            next = rng.weighted(['completed', 'discontinued', ''], [8, 10, 82]);
            gap = days(30, 90);
          }
          if (!next) return;
          push(next, gap);
          cur = next;
        }
      };
      if (reachAt !== undefined) {
        if (role === 'late') {
          push('preScreening', 0);
          push('firstVisitScheduled', days(1, 6));
          push('inScreening', days(3, 10));
          const fvs = statuses[statuses.length - 2]!;
          fvs.lateBy = at - fvs.at + days(2, 6);
          if (rng.chance(0.5)) natural('inScreening');
        } else if (role === 'regression') {
          push('preScreening', 0);
          push('firstVisitScheduled', days(1, 6));
          push('inScreening', days(3, 10));
          push('screenFailure', days(7, 20));
          push('inScreening', days(2, 10));
          if (rng.chance(0.5)) push('enrolled', days(7, 20));
        } else if (role === 'regressionPre') {
          push('preScreening', 0);
          push('preScreenFailure', days(1, 5));
          push('preScreening', days(1, 5));
          if (rng.chance(0.5)) push('firstVisitScheduled', days(2, 8));
        } else if (role === 'repeated') {
          push('preScreening', 0);
          push('preScreening', rng.int(1, 6) * HOUR);
          natural('preScreening');
        } else if (role === 'unknownStatus') {
          push('preScreening', 0);
          push('awaitingMedicalRecords', days(1, 3));
          if (rng.chance(0.6)) natural('preScreening');
        } else if (reachKind === 'notInterested') {
          if (rng.chance(0.5)) push('archive', days(1, 5));
        } else {
          statuses.length = 0;
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
        push('archive', days(3, 14));
      } else if (attempts === 0 && rng.chance(0.04)) {
        at = createdAt;
        push('archive', days(20, 40));
      }
      for (const s of statuses) {
        const extraLag = s.lateBy ?? (rng.chance(0.01) ? days(1, 4) : 0);
        emit(STATUS_CHANGED, s.at, { statusChangedTime: iso(s.at), ...ids(), patientStatus: s.status }, extraLag);
        lastDomain = Math.max(lastDomain, s.at);
        if (drift && s.status === 'enrolled') {
          const u = s.at + drng.int(1, 20) * MIN;
          emit(SUBJECT_ID_UPDATED, u, { subjectIdUpdatedTime: iso(u), ...ids(), subjectId: `S${t + 1}-${String(drng.int(1, 9999)).padStart(4, '0')}` });
        }
      }
      if (drift && drng.chance(0.08)) {
        const c = Math.round(drng.between(createdAt + HOUR, Math.max(createdAt + 2 * HOUR, lastDomain)));
        emit(COMMENT_UPDATED, c, {
          commentUpdatedTime: iso(c),
          ...ids(),
          commentId: `cm_${drng.hex(16)}`,
          comment: drng.pick(['Prefers calls after 5pm.', 'Spanish-speaking coordinator requested.', 'Will bring medication list to visit.', 'Asked for parking information.']),
        });
      }
    }
  }

  // v2.patient.created: introduced late; the first request returns all previously created patients (spec §6.5).
  drafts.sort((a, b) => a.publishAt - b.publishAt || a.seq - b.seq);
  const vrng = new Rng(seed, 7);
  if (drafts.length > 0 && createdDrafts.length > 0) {
    const v2Intro = drafts[Math.floor(drafts.length * 0.92)]!.publishAt;
    let blockAt = v2Intro;
    createdDrafts.sort((a, b) => a.createdAt - b.createdAt || a.draft.seq - b.draft.seq);
    for (const { draft } of createdDrafts) {
      const message = { ...draft.message, referralSource: vrng.pick(['studyWebsite', 'partnerReferral', 'physicianReferral', 'socialMedia']) };
      let publishAt: number;
      if (draft.publishAt <= v2Intro) {
        blockAt += vrng.int(15, 250);
        publishAt = blockAt;
      } else {
        publishAt = draft.publishAt + vrng.int(1, 800);
      }
      drafts.push({ publishAt, seq: seq++, trialId: draft.trialId, type: PATIENT_CREATED_V2, message });
    }
    drafts.sort((a, b) => a.publishAt - b.publishAt || a.seq - b.seq);
  }

  // Envelopes, with drift decorations from their own random stream.
  const erng = new Rng(seed, 9);
  const events: TruthEvent[] = drafts.map((d, i) => {
    const id = eventIdAt(seed, i);
    const useName = drift && erng.chance(0.07);
    const skewed = erng.chance(0.02) ? d.publishAt - erng.int(1, 1500) : d.publishAt;
    const publishedTime = iso(skewed);
    const message: Record<string, unknown> = { ...d.message };
    if (drift && erng.chance(0.04)) {
      const k = erng.int(0, 3);
      if (k === 0) message['updatedBy'] = 'system';
      else if (k === 1) message['sourceChannel'] = { kind: 'web', campaign: erng.pick(['spring', 'search', 'newsletter']) };
      else if (k === 2) message['tags'] = ['priority'];
      else message['notes'] = null;
    }
    const envelope: Record<string, unknown> = useName
      ? { id, name: d.type, publishedTime, message }
      : { id, publishedTime, eventType: d.type, message };
    if (drift && erng.chance(0.04)) {
      const k = erng.int(0, 2);
      if (k === 0) envelope['traceId'] = erng.hex(32);
      else if (k === 1) envelope['schemaVersion'] = 1;
      else envelope['metadata'] = { region: 'us-east-1', replayed: false };
    }
    const rsid = message['referralSubjectId'];
    const ev: TruthEvent = {
      id,
      eventType: d.type,
      typeKey: useName ? 'name' : 'eventType',
      trialId: d.trialId,
      publishedTime,
      envelope,
    };
    if (typeof rsid === 'string') ev.referralSubjectId = rsid;
    return ev;
  });
  return { trialIds, sites, events };
}
