/**
 * Shapes shared by the simulator's generator, server and ground truth.
 *
 * @module
 */

/** A site record of the study-website site list (docs/upstream.md "Site list"), exactly as served. */
export interface SiteRecord {
  /** Study-website site id: a namespace of its own, never equal to an event `siteId` (docs/upstream.md "Services and identifiers"). */
  siteId: string;
  displayName: string;
  siteName: string;
  /** Sponsor's site number; equals the `sponsorSiteId` on `v1.patient.created` events of that site (docs/domain.md). */
  sponsorSiteId: string;
  street: string;
  address1: string;
  /** Null for some sites (docs/upstream.md "Site list": may be null). */
  address2: string | null;
  city: string;
  state: string;
  postalCode: string;
  country: string;
  phoneNumber: string;
  /** Degrees, WGS84. */
  latitude: number;
  /** Degrees, WGS84. */
  longitude: number;
}

/** One event of the generated stream, as the ground truth knows it. */
export interface TruthEvent {
  /** Envelope `id`. */
  id: string;
  /** The type as sent, under `eventType` or `name` (docs/upstream.md "Event envelope"). */
  eventType: string;
  /** Which envelope key carries the type. */
  typeKey: 'eventType' | 'name';
  /** `message.trialId`. */
  trialId: string;
  /** `message.referralSubjectId`, when the message has one. */
  referralSubjectId?: string;
  /** Envelope `publishedTime` (ISO 8601 GMT with milliseconds). */
  publishedTime: string;
  /** Exactly the object that is serialized on the wire (unknown keys included). */
  envelope: Record<string, unknown>;
}

/** One status of a patient's history (from `v1.patient.created` or `v1.patient.statusChanged`). */
export interface TruthStatus {
  /** `patientStatus` as sent (may be a value unknown to the models). */
  status: string;
  /** Domain time: `createdTime` of the created event or `statusChangedTime` (ISO 8601). */
  at: string;
  /** The event that carried it. */
  eventId: string;
  /** True when an earlier event of the stream already carried a status with a later domain time (a backfilled status). */
  late: boolean;
}

/** Edge-case labels the ground truth attaches to patients (docs/domain.md "Rules for the models"). */
export type EdgeCase =
  | 'late-status'
  | 'regression'
  | 'repeated-status'
  | 'orphan'
  | 'unknown-status'
  | 'unknown-outcome'
  | 'both-spellings'
  | 'duplicate-delivery'
  | 'several-sites';

/** One patient: one per (trialId, referralSubjectId) seen in any event, orphans included. */
export interface TruthPatient {
  trialId: string;
  referralSubjectId: string;
  /** Event `siteId` of the `v1.patient.created` event; for orphans the site of their first event. */
  siteId: string;
  /** `sponsorSiteId` of the created event, when there is one. */
  sponsorSiteId?: string;
  /** True when a `v1.patient.created` event exists for the patient. */
  hasCreatedEvent: boolean;
  referralReceivedTime?: string;
  /** `createdTime` of the `v1.patient.created` event. */
  createdTime?: string;
  /** The earliest `referralAcknowledgedTime`. */
  acknowledgedTime?: string;
  /**
   * Status history in domain-time order, ties by stream order; repeats included; the
   * created event's initial status included (`v2.patient.created` is not a status source).
   */
  statuses: TruthStatus[];
  /** The status with the latest domain time (ties: later stream position). */
  currentStatus?: string;
  /** Distinct contact-attempt ids in order of first delivery. */
  contactAttemptIds: string[];
  /** All distinct event `siteId`s of the patient, in order of first appearance. */
  siteIds: string[];
  /** Which edge cases this patient exhibits (computed from the stream, sorted). */
  edgeCases: EdgeCase[];
}

/** One contact attempt: one per distinct `contactAttemptId`. */
export interface TruthContactAttempt {
  contactAttemptId: string;
  trialId: string;
  referralSubjectId: string;
  siteId: string;
  /** Date only, YYYY-MM-DD. */
  contactAttemptDate: string;
  /** When the attempt was entered (ISO 8601). */
  createdTime: string;
  outcomes: string[];
  /** Every event that delivered it, in stream order. */
  eventIds: string[];
  /** Distinct event types that delivered it (`v1.contactAttempt.created`, `v1.patient.contactAttempt.created`). */
  spellings: string[];
}

/** What the simulator generated: the oracle for tests. */
export interface GroundTruth {
  /** Trial ids, e.g. `['TRIAL-001', 'TRIAL-002']`. */
  trialIds: string[];
  /** The whole generated stream in stream order (index = position − 1), visible or not. */
  events: TruthEvent[];
  /** How many events (a prefix of `events`) the API serves now. */
  visibleCount(): number;
  /** One per (trialId, referralSubjectId), computed over the whole generated stream. */
  patients: TruthPatient[];
  /** One per distinct contactAttemptId, computed over the whole generated stream. */
  contactAttempts: TruthContactAttempt[];
  /** The site-list records served, per trial id. */
  sites: Record<string, SiteRecord[]>;
}
