/**
 * The contact-attempt phase of a patient's story (storyPatient.ts): up to six calls on
 * business days until the patient is reached, refuses, has a bad number or the site gives
 * up; each attempt is one event under either contact-attempt spelling, some delivered twice.
 *
 * @module
 */
import { CONTACT_ATTEMPT_CREATED, PATIENT_CONTACT_ATTEMPT_CREATED } from './eventTypes.js';
import type { Rng } from './prng.js';
import type { TrialSite } from './sites.js';
import { clamp, dateOf, DAY, HOUR, iso, MIN, workTime } from './storyCommon.js';
import type { PatientStory } from './storyCommon.js';
import { forcesReach, minAttemptsOf, type Role } from './storyRoles.js';

/** How the calls ended. */
export interface ContactResult {
  /** When the reaching call happened (epoch ms), if one did. */
  reachAt?: number;
  /** What the reaching call gave. */
  reachKind?: 'reached' | 'notInterested';
  /** Number of attempts made. */
  attempts: number;
  /** The time of the last attempt when nobody was reached after at least one attempt. */
  gaveUpAt?: number;
}

const MAX_ATTEMPTS = 6;

/** The outcomes of attempt `a` (0-based), and whether it reached the patient or ends the calls. */
function attemptOutcomes(
  rng: Rng,
  role: Role | undefined,
  a: number,
  forceReach: boolean,
  minAttempts: number,
): { outcomes: string[]; reached: boolean; stop: boolean } {
  if (role === 'unknownOutcome' && a === 0) {
    return { outcomes: rng.chance(0.5) ? ['textMessageSent'] : ['noAnswer', 'textMessageSent'], reached: false, stop: false };
  }
  if ((forceReach && a >= 1) || (a + 1 >= minAttempts && rng.chance(0.33))) {
    const outcomes = forceReach
      ? rng.weighted([['reached'], ['reached', 'appointmentScheduled']], [1, 1])
      : rng.weighted([['reached'], ['reached', 'appointmentScheduled'], ['notInterested'], ['requestedCallBack']], [40, 30, 15, 15]);
    const reached = outcomes[0] !== 'requestedCallBack';
    return { outcomes, reached, stop: reached };
  }
  const outcomes = rng.weighted(
    [['noAnswer'], ['leftVoicemail'], ['noAnswer', 'leftVoicemail'], ['wrongNumber'], ['disconnectedNumber']],
    [45, 25, 22, 4, 4],
  );
  const stop = (outcomes[0] === 'wrongNumber' || outcomes[0] === 'disconnectedNumber') && a + 1 >= minAttempts && !forceReach;
  return { outcomes, reached: false, stop };
}

/** The event type of attempt `a`: alternating for role `bothSpellings`, else mostly `v1.contactAttempt.created`. */
function spellingOf(rng: Rng, role: Role | undefined, a: number, spellingFlip: boolean): string {
  if (role === 'bothSpellings') return (a + (spellingFlip ? 1 : 0)) % 2 === 0 ? CONTACT_ATTEMPT_CREATED : PATIENT_CONTACT_ATTEMPT_CREATED;
  return rng.chance(0.25) ? PATIENT_CONTACT_ATTEMPT_CREATED : CONTACT_ATTEMPT_CREATED;
}

/**
 * Emits the patient's contact attempts (updating `p.site` for role `severalSites` and
 * `p.lastDomain`).
 *
 * @param trialSites the trial's sites (a `severalSites` patient moves to another one)
 */
export function contactAttempts(p: PatientStory, trialSites: TrialSite[]): ContactResult {
  const { rng, role, createdAt } = p;
  const forceReach = forcesReach(role);
  const minAttempts = minAttemptsOf(role);
  const result: ContactResult = { attempts: 0 };
  const noAttempts = minAttempts === 0 && !forceReach && rng.chance(0.12);
  if (noAttempts) return result;
  const firstDelay = clamp(rng.logNormal(1.2 * DAY, 0.9), 30 * MIN, 14 * DAY);
  let attemptAt = workTime(rng, createdAt + firstDelay, createdAt + 10 * MIN);
  let spellingFlip = rng.chance(0.5);
  for (let a = 0; a < MAX_ATTEMPTS; a++) {
    const { outcomes, reached, stop } = attemptOutcomes(rng, role, a, forceReach, minAttempts);
    const enteredAt = rng.chance(0.8) ? attemptAt + rng.int(1, 40) * MIN : workTime(rng, attemptAt + DAY, attemptAt);
    const spelling = spellingOf(rng, role, a, spellingFlip);
    const message = {
      createdTime: iso(enteredAt),
      contactAttemptDate: dateOf(attemptAt),
      ...p.ids(),
      contactAttemptId: `ca_${rng.hex(20)}`,
      contactAttemptOutcomes: outcomes,
    };
    p.emit(spelling, enteredAt, message);
    if ((role === 'duplicateDelivery' && a === 0) || rng.chance(0.015)) {
      const other = spelling === CONTACT_ATTEMPT_CREATED ? PATIENT_CONTACT_ATTEMPT_CREATED : CONTACT_ATTEMPT_CREATED;
      spellingFlip = !spellingFlip;
      p.emit(
        rng.chance(0.5) ? other : spelling,
        enteredAt,
        { ...message, contactAttemptOutcomes: [...outcomes] },
        rng.int(30, 3 * 3600) * 1000,
      );
    }
    result.attempts++;
    p.lastDomain = Math.max(p.lastDomain, enteredAt);
    if (role === 'severalSites' && a === 0) {
      const others = trialSites.filter((s) => s !== p.site);
      if (others.length > 0) p.site = rng.pick(others);
    }
    if (reached) {
      result.reachAt = attemptAt;
      result.reachKind = outcomes[0] === 'notInterested' ? 'notInterested' : 'reached';
    }
    if (stop) break;
    if (!forceReach && a + 1 >= Math.max(minAttempts, 2) && rng.chance(0.2)) break;
    attemptAt = workTime(rng, attemptAt + rng.int(1, 4) * DAY, attemptAt + HOUR);
  }
  if (result.reachAt === undefined) result.gaveUpAt = attemptAt;
  return result;
}
