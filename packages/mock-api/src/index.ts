/**
 * The simulator of the upstream API (`mock-api`): a local server faithful to
 * the upstream API as docs/upstream.md describes it, serving deterministic recruitment data with a ground truth
 * for tests and runtime fault injection.
 *
 * ```ts
 * const api = await startMockApi({ seed: 7, releaseFraction: 0.5 });
 * // api.baseUrl, `${api.authUrl}/oauth/token`, api.options.clientId / clientSecret / audience
 * api.grow(100);                       // release 100 more events
 * api.faults.add({ endpoint: 'events', kind: 'status', code: 503, times: 3 });
 * await api.close();
 * ```
 *
 * @module
 */
export { startMockApi, type MockApi } from './start.js';
export { badToken } from './tokenEndpoint.js';
export { expectedEvents, type ExpectedEventsFilter } from './truth.js';
export { MockApiOptionsSchema, type MockApiOptions, type ResolvedMockApiOptions } from './options.js';
export { parseFaultSpec, validateFaultRule, type FaultController, type FaultRule } from './faults.js';
export type { MockApiStats } from './server.js';
export type { BadTokenVariant, FaultEndpoint, FaultKind, FiredFault, NextPageVariant, PendingFault } from './faults.js';
export type { RequestLogEntry } from './server.js';
export type { EdgeCase, GroundTruth, SiteRecord, TruthContactAttempt, TruthEvent, TruthPatient, TruthStatus } from './types.js';
export {
  COMMENT_UPDATED,
  CONTACT_ATTEMPT_CREATED,
  CONTACT_ATTEMPT_TYPES,
  DEFAULT_EVENT_TYPES,
  KNOWN_OUTCOMES,
  KNOWN_STATUSES,
  PATIENT_CONTACT_ATTEMPT_CREATED,
  PATIENT_CREATED,
  PATIENT_CREATED_V2,
  REFERRAL_ACKNOWLEDGED,
  STATUS_CHANGED,
  SUBJECT_ID_UPDATED,
} from './eventTypes.js';

export { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, MOCK_API_USAGE, mockApiOptionsFromFlags } from './mockApiFlags.js';
export type { MockApiFlag, MockApiFlagValues } from './mockApiFlags.js';
export { CLI_DEFAULT_PORT, envNameOf, mockApiValues, runMockApiCli, type MockApiCliIo } from './main.js';
export { ConfigError } from './errors.js';
