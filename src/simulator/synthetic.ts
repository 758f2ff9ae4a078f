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
}

interface SynPatient {
  trial: number;
  site: number;
  rsid: string;
  ack: boolean;
}

const STATUSES = ['preScreening', 'firstVisitScheduled', 'inScreening', 'enrolled', 'preScreenFailure', 'screenFailure', 'archive'];
const OUTCOMES = ['["noAnswer"]', '["leftVoicemail"]', '["noAnswer","leftVoicemail"]', '["reached"]', '["reached","appointmentScheduled"]', '["notInterested"]'];
const RING = 4096;

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
  let t = options.startTimeMs;
  for (let i = 0; i < options.count; i++) {
    t += rng.int(1, 1800);
    const id = store.idAt(i);
    const pub = new Date(t).toISOString();
    const r = rng.next();
    if (ring.length === 0 || r < 0.2) {
      const trial = rng.int(0, options.trialIds.length - 1);
      const site = rng.int(0, siteIds[trial]!.length - 1);
      const p: SynPatient = { trial, site, rsid: `RS-${rng.base32(10)}`, ack: false };
      if (ring.length < RING) ring.push(p);
      else ring[ringNext] = p;
      ringNext = (ringNext + 1) % RING;
      const created = t - rng.int(200, 9000);
      const received = created - rng.int(5_000, 600_000);
      store.append(
        `{"id":"${id}","publishedTime":"${pub}","eventType":"${PATIENT_CREATED}","message":{"referralReceivedTime":"${new Date(received).toISOString()}","createdTime":"${new Date(created).toISOString()}","siteId":"${siteIds[trial]![site]}","trialId":"${options.trialIds[trial]}","referralSubjectId":"${p.rsid}","patientStatus":"potentialCandidate","sponsorSiteId":"${sponsorIds[trial]![site]}"}}`,
        typeCreated,
        trialIdx[trial]!,
      );
      continue;
    }
    const p = ring[rng.int(0, ring.length - 1)]!;
    const domain = new Date(t - rng.int(200, 9000)).toISOString();
    const head = `{"id":"${id}","publishedTime":"${pub}","eventType":"`;
    const ids = `"siteId":"${siteIds[p.trial]![p.site]}","trialId":"${options.trialIds[p.trial]}","referralSubjectId":"${p.rsid}"`;
    if (r < 0.35 && !p.ack) {
      p.ack = true;
      store.append(`${head}${REFERRAL_ACKNOWLEDGED}","message":{"referralAcknowledgedTime":"${domain}",${ids}}}`, typeAck, trialIdx[p.trial]!);
    } else if (r < 0.6) {
      store.append(
        `${head}${STATUS_CHANGED}","message":{"statusChangedTime":"${domain}",${ids},"patientStatus":"${STATUSES[rng.int(0, STATUSES.length - 1)]}"}}`,
        typeStatus,
        trialIdx[p.trial]!,
      );
    } else {
      store.append(
        `${head}${CONTACT_ATTEMPT_CREATED}","message":{"createdTime":"${domain}","contactAttemptDate":"${domain.slice(0, 10)}",${ids},"contactAttemptId":"ca_${rng.hex(20)}","contactAttemptOutcomes":${OUTCOMES[rng.int(0, OUTCOMES.length - 1)]}}}`,
        typeCa,
        trialIdx[p.trial]!,
      );
    }
  }
}
