/**
 * Event type names used by the simulator (the shared list of `@recruit-etl/event-types`) and the
 * statuses and outcomes it knows (docs/upstream.md "Event types and messages", "Versioning and open sets"; docs/domain.md).
 *
 * @module
 */

export {
  COMMENT_UPDATED,
  CONTACT_ATTEMPT_CREATED,
  CONTACT_ATTEMPT_TYPES,
  DEFAULT_EVENT_TYPES,
  PATIENT_CONTACT_ATTEMPT_CREATED,
  PATIENT_CREATED,
  PATIENT_CREATED_V2,
  REFERRAL_ACKNOWLEDGED,
  STATUS_CHANGED,
  SUBJECT_ID_UPDATED,
} from '@recruit-etl/event-types';

/** Status values documented by the vendor (docs/domain.md "Where the events come from"); anything else is "unknown" for the truth. */
export const KNOWN_STATUSES: readonly string[] = [
  'potentialCandidate',
  'preScreening',
  'firstVisitScheduled',
  'inScreening',
  'enrolled',
  'preScreenFailure',
  'screenFailure',
  'discontinued',
  'archive',
  'completed',
];

/** Contact-attempt outcomes the simulator treats as known (docs/domain.md "The funnel": the outcomes of seed_contact_outcomes). */
export const KNOWN_OUTCOMES: readonly string[] = [
  'noAnswer',
  'leftVoicemail',
  'reached',
  'appointmentScheduled',
  'notInterested',
  'wrongNumber',
  'disconnectedNumber',
  'requestedCallBack',
];
