/**
 * Shapes, time units and time helpers shared by the story generator's phases (story.ts).
 *
 * @module
 */
import type { Rng } from './prng.js';
import type { TrialSite } from './sites.js';
import type { Role } from './storyRoles.js';

/** One event of the story before publication: its type, message and publication time. */
export interface Draft {
  /** Publication time, epoch ms (stream order: `publishAt`, then `seq`). */
  publishAt: number;
  /** Creation order, the tie-breaker. */
  seq: number;
  trialId: string;
  type: string;
  message: Record<string, unknown>;
}

/** Milliseconds in a minute, an hour, a day. */
export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/** Days over which referrals spread from the start time. */
export const WINDOW_DAYS = 56;

/** ISO 8601 UTC with milliseconds. */
export const iso = (ms: number): string => new Date(ms).toISOString();
/** The UTC date, YYYY-MM-DD. */
export const dateOf = (ms: number): string => iso(ms).slice(0, 10);
export const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** A time on the UTC day of `ms` during US business hours (13:00–23:00 UTC), not before `notBefore`. */
export function workTime(rng: Rng, ms: number, notBefore: number): number {
  const day = Math.floor(ms / DAY) * DAY;
  const t = day + 13 * HOUR + rng.int(0, 10 * 60) * MIN + rng.int(0, 59) * 1000;
  return t > notBefore ? t : notBefore + rng.int(10, 120) * MIN;
}

/** A random span of `lo`..`hi` days at hour resolution plus 0–59 minutes, in ms. */
export const days = (rng: Rng, lo: number, hi: number): number => rng.int(lo * 24, hi * 24) * HOUR + rng.int(0, 59) * MIN;

/** A patient while its story is told: who, where now, and how to emit its events. */
export interface PatientStory {
  /** The patient's main random stream. */
  readonly rng: Rng;
  /** Its drift stream (subject-id and comment updates), apart so drift leaves the rest unchanged. */
  readonly drng: Rng;
  readonly role: Role | undefined;
  /** 0-based trial index. */
  readonly trialIndex: number;
  readonly trialId: string;
  readonly referralSubjectId: string;
  /** `createdTime` of the referral, epoch ms. */
  readonly createdAt: number;
  /** The site of the patient's next events (changes once for role `severalSites`). */
  site: TrialSite;
  /** The latest domain time so far, epoch ms. */
  lastDomain: number;
  /** Emits an event of `type` at domain time `domainAt` (ms), published after a random lag plus `extraLag` ms. */
  emit(type: string, domainAt: number, message: Record<string, unknown>, extraLag?: number): Draft;
  /** `{ siteId, trialId, referralSubjectId }` of the current site, in that key order. */
  ids(): Record<string, unknown>;
}
