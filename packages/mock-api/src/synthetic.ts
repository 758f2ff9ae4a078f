/**
 * The synthetic data set for benchmarks (`syntheticEvents`): N simple but realistic
 * events of the four default types across the trials, rendered straight to JSON into the
 * {@link EventStore} (no intermediate objects), so that 1,000,000 events take seconds.
 *
 * @module
 */
import type { EventStore } from './eventStore.js';
import { CONTACT_ATTEMPT_CREATED, PATIENT_CREATED, REFERRAL_ACKNOWLEDGED, STATUS_CHANGED } from './eventTypes.js';
import { Rng } from './prng.js';
import type { TrialSite } from './sites.js';

/** Inputs of {@link generateSynthetic}. */
export interface SyntheticOptions {
  seed: number;
  /** Number of events to generate (≥ 0). */
  count: number;
  /** Trial ids in order. */
  trialIds: string[];
  /** Sites per trial id. */
  sites: Record<string, TrialSite[]>;
  /** Time of the first event, epoch ms. */
  startTimeMs: number;
  /**
   * In the last `lateTail` events, one status change in five goes to a random earlier patient
   * (not only the recent ones) with a status time weeks before its publication: the late
   * statuses a night brings (bench's nightly scenario). Default 0: the output is unchanged.
   */
  lateTail?: number;
}

interface SynPatient {
  trial: number;
  site: number;
  rsid: string;
  ack: boolean;
}

const STATUSES = ['preScreening', 'firstVisitScheduled', 'inScreening', 'enrolled', 'preScreenFailure', 'screenFailure', 'archive'];
const OUTCOMES = [
  '["noAnswer"]',
  '["leftVoicemail"]',
  '["noAnswer","leftVoicemail"]',
  '["reached"]',
  '["reached","appointmentScheduled"]',
  '["notInterested"]',
];
const RING = 4096;
const DAY_MS = 86_400_000;
const PAD = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/** `new Date(ms).toISOString()` for years 1970–9999, several times faster (caches the day). */
class IsoClock {
  private day = Number.NaN;
  private prefix = '';
  format(ms: number): string {
    const day = Math.floor(ms / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    }
    let r = ms - day * DAY_MS;
    const h = Math.floor(r / 3_600_000);
    r -= h * 3_600_000;
    const m = Math.floor(r / 60_000);
    r -= m * 60_000;
    const s = Math.floor(r / 1000);
    return `${this.prefix}${PAD[h]!.slice(1)}:${PAD[m]!.slice(1)}:${PAD[s]!.slice(1)}.${PAD[r - s * 1000]!}Z`;
  }
}

/**
 * Appends `count` synthetic events to `store` (which must be empty). Every event is a
 * valid envelope (`eventType` key, ISO 8601 GMT timestamps with milliseconds) of 300–450
 * bytes; a patient's created event precedes its other events.
 */
export function generateSynthetic(store: EventStore, options: SyntheticOptions): void {
  const rng = new Rng(options.seed, 42);
  const typeCreated = store.typeIdx(PATIENT_CREATED);
  const typeAck = store.typeIdx(REFERRAL_ACKNOWLEDGED);
  const typeStatus = store.typeIdx(STATUS_CHANGED);
  const typeCa = store.typeIdx(CONTACT_ATTEMPT_CREATED);
  const trialIdx = options.trialIds.map((t) => store.trialIdx(t));
  const siteIds = options.trialIds.map((t) => (options.sites[t] ?? []).map((s) => s.eventSiteId));
  const sponsorIds = options.trialIds.map((t) => (options.sites[t] ?? []).map((s) => s.sponsorSiteId));
  const ring: SynPatient[] = [];
  let ringNext = 0;
  const lateFrom = options.count - (options.lateTail ?? 0);
  // every patient so far, kept only when a late tail is asked for
  const everyone: SynPatient[] | undefined = (options.lateTail ?? 0) > 0 ? [] : undefined;
  let t = options.startTimeMs;
  const clock = new IsoClock();
  for (let i = 0; i < options.count; i++) {
    t += rng.int(1, 1800);
    const id = store.idAt(i);
    const pub = clock.format(t);
    const r = rng.next();
    if (ring.length === 0 || r < 0.2) {
      const trial = rng.int(0, options.trialIds.length - 1);
      const site = rng.int(0, siteIds[trial]!.length - 1);
      const p: SynPatient = { trial, site, rsid: `RS-${rng.base32(10)}`, ack: false };
      everyone?.push(p);
      if (ring.length < RING) ring.push(p);
      else ring[ringNext] = p;
      ringNext = (ringNext + 1) % RING;
      const created = t - rng.int(200, 9000);
      const received = created - rng.int(5_000, 600_000);
      store.appendAscii(
        `{"id":"${id}","publishedTime":"${pub}","eventType":"${PATIENT_CREATED}","message":{"referralReceivedTime":"${clock.format(received)}","createdTime":"${clock.format(created)}","siteId":"${siteIds[trial]![site]}","trialId":"${options.trialIds[trial]}","referralSubjectId":"${p.rsid}","patientStatus":"potentialCandidate","sponsorSiteId":"${sponsorIds[trial]![site]}"}}`,
        typeCreated,
        trialIdx[trial]!,
      );
      continue;
    }
    let p = ring[rng.int(0, ring.length - 1)]!;
    let domain = clock.format(t - rng.int(200, 9000));
    if (everyone && i >= lateFrom && r >= 0.35 && r < 0.6 && rng.int(0, 4) === 0) {
      p = everyone[rng.int(0, everyone.length - 1)]!;
      domain = clock.format(t - rng.int(7, 60) * DAY_MS);
    }
    const head = `{"id":"${id}","publishedTime":"${pub}","eventType":"`;
    const ids = `"siteId":"${siteIds[p.trial]![p.site]}","trialId":"${options.trialIds[p.trial]}","referralSubjectId":"${p.rsid}"`;
    if (r < 0.35 && !p.ack) {
      p.ack = true;
      store.appendAscii(
        `${head}${REFERRAL_ACKNOWLEDGED}","message":{"referralAcknowledgedTime":"${domain}",${ids}}}`,
        typeAck,
        trialIdx[p.trial]!,
      );
    } else if (r < 0.6) {
      store.appendAscii(
        `${head}${STATUS_CHANGED}","message":{"statusChangedTime":"${domain}",${ids},"patientStatus":"${STATUSES[rng.int(0, STATUSES.length - 1)]}"}}`,
        typeStatus,
        trialIdx[p.trial]!,
      );
    } else {
      store.appendAscii(
        `${head}${CONTACT_ATTEMPT_CREATED}","message":{"createdTime":"${domain}","contactAttemptDate":"${domain.slice(0, 10)}",${ids},"contactAttemptId":"ca_${rng.hex(20)}","contactAttemptOutcomes":${OUTCOMES[rng.int(0, OUTCOMES.length - 1)]}}}`,
        typeCa,
        trialIdx[p.trial]!,
      );
    }
  }
  store.flush();
}
