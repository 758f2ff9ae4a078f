/**
 * The names of the upstream API's event types (docs/upstream.md "Event types and messages",
 * "Versioning and open sets"; docs/domain.md), shared by the job (its default `--event-type`
 * list, docs/contracts.md "Options") and the simulator (packages/mock-api), so that neither
 * imports the other.
 *
 * @module
 */

/** `v1.patient.created` (docs/upstream.md "Event types and messages"). */
export const PATIENT_CREATED = 'v1.patient.created';
/** `v1.patient.referralAcknowledged` (docs/upstream.md "Event types and messages"). */
export const REFERRAL_ACKNOWLEDGED = 'v1.patient.referralAcknowledged';
/** `v1.patient.statusChanged` (docs/upstream.md "Event types and messages"). */
export const STATUS_CHANGED = 'v1.patient.statusChanged';
/** Contact-attempt spelling of the request example (docs/upstream.md "Event types and messages"). */
export const CONTACT_ATTEMPT_CREATED = 'v1.contactAttempt.created';
/** Contact-attempt spelling of the sample response, same message shape (docs/upstream.md "Event types and messages"). */
export const PATIENT_CONTACT_ATTEMPT_CREATED = 'v1.patient.contactAttempt.created';
/** A new version of patient creation, delivered only when requested (docs/upstream.md "Stream properties", "Versioning and open sets"). */
export const PATIENT_CREATED_V2 = 'v2.patient.created';
/** A platform type never requested by default (docs/domain.md "Where the events come from": subject-id update, randomization). */
export const SUBJECT_ID_UPDATED = 'v1.patient.subjectIdUpdated';
/** A platform type never requested by default (docs/domain.md "Where the events come from": comment updates). */
export const COMMENT_UPDATED = 'v1.patient.commentUpdated';

/** Both contact-attempt spellings (docs/upstream.md "Event types and messages": "both spellings occur"). */
export const CONTACT_ATTEMPT_TYPES: readonly string[] = [CONTACT_ATTEMPT_CREATED, PATIENT_CONTACT_ATTEMPT_CREATED];

/**
 * Default event types (docs/contracts.md "Options"): the three patient types and both
 * contact-attempt spellings, since the API leaves the name unresolved (docs/domain.md).
 */
export const DEFAULT_EVENT_TYPES: readonly string[] = [
  PATIENT_CREATED,
  REFERRAL_ACKNOWLEDGED,
  STATUS_CHANGED,
  CONTACT_ATTEMPT_CREATED,
  PATIENT_CONTACT_ATTEMPT_CREATED,
];
