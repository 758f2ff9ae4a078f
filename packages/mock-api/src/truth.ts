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

/** A patient being derived: its record, its raw status changes in stream order, its contact-attempt spellings. */
interface Acc {
  p: TruthPatient;
  statusRaw: Array<{ status: string; at: string; eventId: string; pos: number }>;
  spellings: Set<string>;
}

/** The contact attempts seen so far, by id and in stream order. */
interface Attempts {
  byId: Map<string, TruthContactAttempt>;
  order: TruthContactAttempt[];
}

/** The accumulator of the patient `rsid` of `ev`'s trial, created at its first event. */
function accOf(patients: Map<string, Acc>, ev: TruthEvent, rsid: string, siteId: string): Acc {
  const key = `${ev.trialId}\u0000${rsid}`;
  let acc = patients.get(key);
  if (acc === undefined) {
    acc = {
      p: {
        trialId: ev.trialId,
        referralSubjectId: rsid,
        siteId,
        hasCreatedEvent: false,
        statuses: [],
        contactAttemptIds: [],
        siteIds: [],
        edgeCases: [],
      },
      statusRaw: [],
      spellings: new Set(),
    };
    patients.set(key, acc);
  }
  return acc;
}

/** A `v1.patient.created` event: the patient's first one sets its site and times; each gives a status. */
function applyCreated(acc: Acc, ev: TruthEvent, msg: Record<string, unknown>, siteId: string, pos: number): void {
  const p = acc.p;
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
}

/** A contact-attempt event (either spelling): the attempt at its first delivery, then each delivery's id. */
function applyContactAttempt(acc: Acc, ev: TruthEvent, msg: Record<string, unknown>, siteId: string, attempts: Attempts): void {
  const caId = str(msg['contactAttemptId']);
  if (caId === undefined) return;
  const type = ev.eventType;
  acc.spellings.add(type);
  let ca = attempts.byId.get(caId);
  if (ca === undefined) {
    ca = {
      contactAttemptId: caId,
      trialId: ev.trialId,
      referralSubjectId: acc.p.referralSubjectId,
      siteId,
      contactAttemptDate: str(msg['contactAttemptDate']) ?? '',
      createdTime: str(msg['createdTime']) ?? '',
      outcomes: Array.isArray(msg['contactAttemptOutcomes']) ? (msg['contactAttemptOutcomes'] as unknown[]).map(String) : [],
      eventIds: [],
      spellings: [],
    };
    attempts.byId.set(caId, ca);
    attempts.order.push(ca);
    acc.p.contactAttemptIds.push(caId);
  }
  ca.eventIds.push(ev.id);
  if (!ca.spellings.includes(type)) ca.spellings.push(type);
}

/** One event of the stream at position `pos`, onto its patient (events without a referral subject id are skipped). */
function applyEvent(patients: Map<string, Acc>, attempts: Attempts, ev: TruthEvent, pos: number): void {
  const msg = (ev.envelope['message'] ?? {}) as Record<string, unknown>;
  const rsid = str(msg['referralSubjectId']);
  if (rsid === undefined) return;
  const siteId = str(msg['siteId']) ?? '';
  const acc = accOf(patients, ev, rsid, siteId);
  const p = acc.p;
  if (siteId && !p.siteIds.includes(siteId)) p.siteIds.push(siteId);
  const type = ev.eventType;
  if (type === PATIENT_CREATED) applyCreated(acc, ev, msg, siteId, pos);
  else if (type === STATUS_CHANGED) {
    const st = str(msg['patientStatus']);
    const at = str(msg['statusChangedTime']);
    if (st !== undefined && at !== undefined) acc.statusRaw.push({ status: st, at, eventId: ev.id, pos });
  } else if (type === REFERRAL_ACKNOWLEDGED) {
    const at = str(msg['referralAcknowledgedTime']);
    if (at !== undefined && (p.acknowledgedTime === undefined || at < p.acknowledgedTime)) p.acknowledgedTime = at;
  } else if (CONTACT_ATTEMPT_TYPES.includes(type)) applyContactAttempt(acc, ev, msg, siteId, attempts);
}

/** The patient's statuses in domain-time order, each marked late or not, and the status edge cases. */
function orderStatuses(acc: Acc, edge: Set<EdgeCase>): void {
  const p = acc.p;
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
}

/** The finished patient: ordered statuses, current status and edge cases. */
function finishPatient(acc: Acc, attempts: Attempts): TruthPatient {
  const p = acc.p;
  const edge = new Set<EdgeCase>();
  orderStatuses(acc, edge);
  if (!p.hasCreatedEvent) edge.add('orphan');
  if (acc.spellings.size > 1) edge.add('both-spellings');
  if (p.siteIds.length > 1) edge.add('several-sites');
  for (const id of p.contactAttemptIds) {
    const ca = attempts.byId.get(id)!;
    if (ca.eventIds.length > 1) edge.add('duplicate-delivery');
    if (ca.outcomes.some((o) => !KNOWN_OUTCOMES.includes(o))) edge.add('unknown-outcome');
  }
  p.edgeCases = [...edge].sort();
  return p;
}

/**
 * Derives patients and contact attempts from a stream (whole generated stream, stream order).
 *
 * @param events the stream in stream order
 */
export function deriveTruth(events: readonly TruthEvent[]): { patients: TruthPatient[]; contactAttempts: TruthContactAttempt[] } {
  const patients = new Map<string, Acc>();
  const attempts: Attempts = { byId: new Map(), order: [] };
  events.forEach((ev, pos) => applyEvent(patients, attempts, ev, pos));
  return { patients: [...patients.values()].map((acc) => finishPatient(acc, attempts)), contactAttempts: attempts.order };
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
