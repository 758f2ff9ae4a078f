/**
 * The story data set: per trial, sites and patients whose recruitment stories (referral,
 * acknowledgement, contact attempts, status changes) become events, published into the
 * stream roughly in domain-time order. Every default-size data set contains the edge cases
 * of {@link ROLE_PLAN} (storyRoles.ts); the ground truth recomputes them from the stream
 * (truth.ts).
 *
 * Phases: {@link planTrial} (sites, roles, referral times), then per patient
 * storyPatient.ts (with storyContacts.ts and storyStatuses.ts), then for the whole stream
 * {@link addV2Created} and {@link renderEnvelopes}. Each phase draws from its own seeded
 * random streams in a fixed order: same options, same bytes.
 *
 * @module
 */
import { eventIdAt } from './eventIds.js';
import { PATIENT_CREATED_V2 } from './eventTypes.js';
import { Rng } from './prng.js';
import { generateTrialSites, trialIdOf, type TrialSite } from './sites.js';
import { DAY, iso, MIN, WINDOW_DAYS, type Draft } from './storyCommon.js';
import { tellPatient } from './storyPatient.js';
import { assignRoles, type Role } from './storyRoles.js';
import type { TruthEvent } from './types.js';

export { ROLE_PLAN } from './storyRoles.js';

/** Inputs of {@link generateStory}. */
export interface StoryOptions {
  seed: number;
  trials: number;
  sitesPerTrial: number;
  patientsPerTrial: number;
  /** First referral time, epoch ms. */
  startTimeMs: number;
  /** Envelope/message drift: `name` keys, unknown keys, unknown event types. */
  drift: boolean;
}

/** Output of {@link generateStory}. */
export interface GeneratedStory {
  trialIds: string[];
  sites: Record<string, TrialSite[]>;
  /** The whole stream in stream order; `events[i].id === eventIdAt(seed, i)`. */
  events: TruthEvent[];
}

/** A trial before its patients: sites, edge-case roles and sorted referral times (epoch ms). */
interface TrialPlan {
  trialId: string;
  sites: TrialSite[];
  roles: Array<Role | undefined>;
  referralTimes: number[];
}

const byPublication = (a: Draft, b: Draft): number => a.publishAt - b.publishAt || a.seq - b.seq;

/**
 * Plans trial `t` (0-based) from its own random stream: sites, roles, and referral times
 * over {@link WINDOW_DAYS} days, mostly in US hours, none before the start; trial 0's
 * first referral is exactly at the start.
 */
function planTrial(options: StoryOptions, t: number): TrialPlan {
  const trng = new Rng(options.seed, 100 + t);
  const sites = generateTrialSites(trng, t + 1, Math.max(1, options.sitesPerTrial));
  const roles = assignRoles(trng, options.patientsPerTrial, sites.length);
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
  return { trialId: trialIdOf(t + 1), sites, roles, referralTimes };
}

/**
 * `v2.patient.created` is introduced late in the stream: at its introduction the stream
 * carries one for every patient created before, in a block, then one shortly after each
 * later `v1.patient.created`. Appends them to `drafts` and sorts it by publication.
 *
 * @param drafts every draft, sorted by publication
 * @param created the `v1.patient.created` drafts with their created times
 * @param nextSeq gives the `seq` of a new draft
 */
function addV2Created(seed: number, drafts: Draft[], created: Array<{ draft: Draft; createdAt: number }>, nextSeq: () => number): void {
  const vrng = new Rng(seed, 7);
  if (drafts.length === 0 || created.length === 0) return;
  const v2Intro = drafts[Math.floor(drafts.length * 0.92)]!.publishAt;
  let blockAt = v2Intro;
  created.sort((a, b) => a.createdAt - b.createdAt || a.draft.seq - b.draft.seq);
  for (const { draft } of created) {
    const message = {
      ...draft.message,
      referralSource: vrng.pick(['studyWebsite', 'partnerReferral', 'physicianReferral', 'socialMedia']),
    };
    let publishAt: number;
    if (draft.publishAt <= v2Intro) {
      blockAt += vrng.int(15, 250);
      publishAt = blockAt;
    } else {
      publishAt = draft.publishAt + vrng.int(1, 800);
    }
    drafts.push({ publishAt, seq: nextSeq(), trialId: draft.trialId, type: PATIENT_CREATED_V2, message });
  }
  drafts.sort(byPublication);
}

/**
 * The envelopes of the stream, in order, with drift decorations (a `name` key instead of
 * `eventType`, unknown envelope and message keys) and a few skewed `publishedTime`s, from
 * a random stream of their own.
 */
function renderEnvelopes(seed: number, drift: boolean, drafts: readonly Draft[]): TruthEvent[] {
  const erng = new Rng(seed, 9);
  return drafts.map((d, i) => {
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
}

/**
 * Generates the story data set. Deterministic in `options`.
 *
 * @returns trials, sites and the complete stream with envelopes ready to serialize
 */
export function generateStory(options: StoryOptions): GeneratedStory {
  const { seed, drift } = options;
  const trialIds: string[] = [];
  const sites: Record<string, TrialSite[]> = {};
  const drafts: Draft[] = [];
  let seq = 0;
  const nextSeq = (): number => seq++;
  const created: Array<{ draft: Draft; createdAt: number }> = [];
  const push = (d: Omit<Draft, 'seq'>): Draft => {
    const draft: Draft = { publishAt: d.publishAt, seq: nextSeq(), trialId: d.trialId, type: d.type, message: d.message };
    drafts.push(draft);
    return draft;
  };

  for (let t = 0; t < options.trials; t++) {
    const plan = planTrial(options, t);
    trialIds.push(plan.trialId);
    sites[plan.trialId] = plan.sites;
    for (let k = 0; k < options.patientsPerTrial; k++) {
      const c = tellPatient({
        seed,
        trialIndex: t,
        patientIndex: k,
        trialId: plan.trialId,
        trialSites: plan.sites,
        role: plan.roles[k],
        referralAt: plan.referralTimes[k]!,
        drift,
        push,
      });
      if (c !== undefined) created.push(c);
    }
  }

  drafts.sort(byPublication);
  addV2Created(seed, drafts, created, nextSeq);
  return { trialIds, sites, events: renderEnvelopes(seed, drift, drafts) };
}
