/**
 * Ground truth derived from a generated stream: patients, contact attempts and their
 * edge cases, computed from the events themselves (docs/domain.md "Rules for the models"),
 * plus {@link expectedEvents}, the oracle of what a filtered read must return.
 *
 * @module
 */
import {
  CONTACT_ATTEMPT_TYPES,
  KNOWN_OUTCOMES,
  KNOWN_STATUSES,
  PATIENT_CREATED,
  REFERRAL_ACKNOWLEDGED,
  STATUS_CHANGED,
} from './eventTypes.js';
import type { EdgeCase, GroundTruth, TruthContactAttempt, TruthEvent, TruthPatient } from './types.js';

/** Funnel order used to flag regressions (docs/domain.md "The funnel"); archive and unknown values have no rank. */
const RANK: Record<string, number> = {
  potentialCandidate: 1,
  preScreening: 2,
  preScreenFailure: 2.5,
  firstVisitScheduled: 3,
  inScreening: 4,
  screenFailure: 4.5,
  enrolled: 5,
  completed: 6,
  discontinued: 6,
};

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Derives patients and contact attempts from a stream (whole generated stream, stream order).
 *
 * @param events the stream in stream order
 */
// eslint-disable-next-line max-lines-per-function -- the simulator's: split when it moves to a package of its own
export function deriveTruth(events: readonly TruthEvent[]): { patients: TruthPatient[]; contactAttempts: TruthContactAttempt[] } {
  interface Acc {
    p: TruthPatient;
    statusRaw: Array<{ status: string; at: string; eventId: string; pos: number }>;
    spellings: Set<string>;
  }
  const patients = new Map<string, Acc>();
  const attempts = new Map<string, TruthContactAttempt>();
  const caOrder: TruthContactAttempt[] = [];

  events.forEach((ev, pos) => {
    const msg = (ev.envelope['message'] ?? {}) as Record<string, unknown>;
    const rsid = str(msg['referralSubjectId']);
    if (rsid === undefined) return;
    const key = `${ev.trialId}\u0000${rsid}`;
    const siteId = str(msg['siteId']) ?? '';
    let acc = patients.get(key);
    if (acc === undefined) {
      acc = {
        p: { trialId: ev.trialId, referralSubjectId: rsid, siteId, hasCreatedEvent: false, statuses: [], contactAttemptIds: [], siteIds: [], edgeCases: [] },
        statusRaw: [],
        spellings: new Set(),
      };
      patients.set(key, acc);
    }
    const p = acc.p;
    if (siteId && !p.siteIds.includes(siteId)) p.siteIds.push(siteId);
    const type = ev.eventType;
    if (type === PATIENT_CREATED) {
      if (!p.hasCreatedEvent) {
        p.hasCreatedEvent = true;
        p.siteId = siteId;
        const sponsor = str(msg['sponsorSiteId']);
        if (sponsor !== undefined) p.sponsorSiteId = sponsor;
        const rr = str(msg['referralReceivedTime']);
        if (rr !== undefined) p.referralReceivedTime = rr;
        const ct = str(msg['createdTime']);
        if (ct !== undefined) p.createdTime = ct;
      }
      const st = str(msg['patientStatus']);
      const at = str(msg['createdTime']);
      if (st !== undefined && at !== undefined) acc.statusRaw.push({ status: st, at, eventId: ev.id, pos });
    } else if (type === STATUS_CHANGED) {
      const st = str(msg['patientStatus']);
      const at = str(msg['statusChangedTime']);
      if (st !== undefined && at !== undefined) acc.statusRaw.push({ status: st, at, eventId: ev.id, pos });
    } else if (type === REFERRAL_ACKNOWLEDGED) {
      const at = str(msg['referralAcknowledgedTime']);
      if (at !== undefined && (p.acknowledgedTime === undefined || at < p.acknowledgedTime)) p.acknowledgedTime = at;
    } else if (CONTACT_ATTEMPT_TYPES.includes(type)) {
      const caId = str(msg['contactAttemptId']);
      if (caId === undefined) return;
      acc.spellings.add(type);
      let ca = attempts.get(caId);
      if (ca === undefined) {
        ca = {
          contactAttemptId: caId,
          trialId: ev.trialId,
          referralSubjectId: rsid,
          siteId,
          contactAttemptDate: str(msg['contactAttemptDate']) ?? '',
          createdTime: str(msg['createdTime']) ?? '',
          outcomes: Array.isArray(msg['contactAttemptOutcomes']) ? (msg['contactAttemptOutcomes'] as unknown[]).map(String) : [],
          eventIds: [],
          spellings: [],
        };
        attempts.set(caId, ca);
        caOrder.push(ca);
        p.contactAttemptIds.push(caId);
      }
      ca.eventIds.push(ev.id);
      if (!ca.spellings.includes(type)) ca.spellings.push(type);
    }
  });

  const out: TruthPatient[] = [];
  for (const acc of patients.values()) {
    const p = acc.p;
    const edge = new Set<EdgeCase>();
    // Late: an earlier stream event of this patient carried a status with a later domain time.
    let maxAt = '';
    const late = new Map<number, boolean>();
    for (const s of acc.statusRaw) {
      late.set(s.pos, maxAt !== '' && s.at < maxAt);
      if (s.at > maxAt) maxAt = s.at;
    }
    const sorted = [...acc.statusRaw].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.pos - b.pos));
    p.statuses = sorted.map((s) => ({ status: s.status, at: s.at, eventId: s.eventId, late: late.get(s.pos) === true }));
    if (p.statuses.length > 0) p.currentStatus = p.statuses[p.statuses.length - 1]!.status;
    let lastRank = 0;
    let prev: string | undefined;
    for (const s of p.statuses) {
      if (s.late) edge.add('late-status');
      if (!KNOWN_STATUSES.includes(s.status)) edge.add('unknown-status');
      if (prev === s.status) edge.add('repeated-status');
      prev = s.status;
      const r = RANK[s.status];
      if (r !== undefined) {
        if (r < lastRank) edge.add('regression');
        lastRank = r;
      }
    }
    if (!p.hasCreatedEvent) edge.add('orphan');
    if (acc.spellings.size > 1) edge.add('both-spellings');
    if (p.siteIds.length > 1) edge.add('several-sites');
    for (const id of p.contactAttemptIds) {
      const ca = attempts.get(id)!;
      if (ca.eventIds.length > 1) edge.add('duplicate-delivery');
      if (ca.outcomes.some((o) => !KNOWN_OUTCOMES.includes(o))) edge.add('unknown-outcome');
    }
    p.edgeCases = [...edge].sort();
    out.push(p);
  }
  return { patients: out, contactAttempts: caOrder };
}

/** The filter of {@link expectedEvents}: the query parameters of docs/upstream.md "Reading the stream". */
export interface ExpectedEventsFilter {
  trialIds: readonly string[];
  eventTypes: readonly string[];
}

/**
 * The visible events a query with this filter returns, in stream order: what an extractor
 * must store, exactly once, at positions 1..n (docs/upstream.md "Reading the stream" rule 1; docs/contracts.md guarantee 1).
 * An envelope typed under `name` matches on that name (docs/upstream.md "Event envelope"); types not requested
 * are never returned (docs/upstream.md "Versioning and open sets").
 */
export function expectedEvents(truth: GroundTruth, filter: ExpectedEventsFilter): TruthEvent[] {
  const types = new Set(filter.eventTypes);
  const trials = new Set(filter.trialIds);
  const visible = truth.visibleCount();
  const out: TruthEvent[] = [];
  const events = truth.events;
  for (let i = 0; i < visible && i < events.length; i++) {
    const e = events[i]!;
    if (types.has(e.eventType) && trials.has(e.trialId)) out.push(e);
  }
  return out;
}
