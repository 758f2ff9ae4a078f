/**
 * A small hand-written raw.events fixture covering every edge case of docs/domain.md, with
 * the exact rows the models must produce (see expected.ts).
 *
 * Patients (trial/subject):
 * - P1 T1/p1: v1 + v2 created (one patient), acknowledged, two attempts (A2 under both
 *   spellings, outcomes merged), a jump potentialCandidate → enrolled (implied ranks),
 *   an unknown event type and an invalid status event (no statusChangedTime).
 * - P2 T1/p2: repeated preScreening (one spell), a late backfilled firstVisitScheduled (slots
 *   in, not current), screenFailure then inScreening again (regression: reinstated).
 * - P3 T1/p3: inScreening → preScreening (regression by rank), an unknown status (current,
 *   unmapped), an attempt with an unknown outcome (reached null).
 * - P4 T1/p4: orphan (no created event), events at two sites.
 * - P5 T2/p5: three attempts, none reaching (unreachable); one attempt delivered on two streams.
 * - P6 T1/p6: created at S1, archived at S2 (multi-site); a status time with a +02:00 offset.
 *
 * @module
 */

/** One row of raw.events, before insertion. */
export interface RawEventRow {
  stream_id: string;
  stream_position: number;
  event_id: string;
  event_type: string | null;
  published_time: string | null;
  message: Record<string, unknown> | null;
  /** Key of the type in the envelope: `eventType` (default) or `name` (the vendor's sample responses: docs/upstream.md "Event envelope"). */
  typeKey?: 'eventType' | 'name';
  extracted_at: string;
}

/** A fixture event before it is given a stream and position. */
export type Ev = Omit<RawEventRow, 'stream_id' | 'stream_position' | 'extracted_at'>;

function plusMinute(iso: string): string {
  return new Date(Date.parse(iso) + 60_000).toISOString();
}

/** A created event (`createdTime` + 1 min published unless given). */
export function created(
  id: string,
  trial: string,
  subject: string,
  site: string,
  referral: string,
  createdTime: string,
  status = 'potentialCandidate',
  type = 'v1.patient.created',
  extra: Record<string, unknown> = {},
  published?: string,
): Ev {
  return {
    event_id: id,
    event_type: type,
    published_time: published ?? plusMinute(createdTime),
    message: {
      referralReceivedTime: referral,
      createdTime,
      siteId: site,
      trialId: trial,
      referralSubjectId: subject,
      patientStatus: status,
      ...extra,
    },
  };
}

/** A referralAcknowledged event (type under `name`). */
export function ack(id: string, trial: string, subject: string, site: string, at: string): Ev {
  return {
    event_id: id,
    event_type: 'v1.patient.referralAcknowledged',
    published_time: plusMinute(at),
    message: { referralAcknowledgedTime: at, siteId: site, trialId: trial, referralSubjectId: subject },
    typeKey: 'name',
  };
}

/** A statusChanged event; `at` undefined leaves out statusChangedTime (an invalid event). */
export function status(
  id: string,
  trial: string,
  subject: string,
  site: string,
  value: string,
  at: string | undefined,
  published?: string,
): Ev {
  const message: Record<string, unknown> = { siteId: site, trialId: trial, referralSubjectId: subject, patientStatus: value };
  if (at !== undefined) message['statusChangedTime'] = at;
  return {
    event_id: id,
    event_type: 'v1.patient.statusChanged',
    published_time: published ?? plusMinute(at ?? '2024-01-10T00:00:00.000Z'),
    message,
  };
}

/** A contact-attempt event under either spelling. */
export function attempt(
  id: string,
  type: 'v1.contactAttempt.created' | 'v1.patient.contactAttempt.created',
  trial: string,
  subject: string,
  site: string,
  attemptId: string,
  date: string,
  createdTime: string,
  outcomes: string[],
): Ev {
  return {
    event_id: id,
    event_type: type,
    published_time: plusMinute(createdTime),
    message: {
      createdTime,
      contactAttemptDate: date,
      siteId: site,
      trialId: trial,
      referralSubjectId: subject,
      contactAttemptId: attemptId,
      contactAttemptOutcomes: outcomes,
    },
  };
}

const CA = 'v1.contactAttempt.created' as const;
const PCA = 'v1.patient.contactAttempt.created' as const;

/** Stream A, created first: positions 1..28. */
const streamA: Ev[] = [
  created('e01', 'T1', 'p1', 'S1', '2024-01-01T09:00:00.000Z', '2024-01-01T10:00:00.000Z', 'potentialCandidate', 'v1.patient.created', {
    sponsorSiteId: 'SP-1',
  }),
  ack('e02', 'T1', 'p1', 'S1', '2024-01-01T20:00:00.000Z'),
  created('e03', 'T1', 'p2', 'S1', '2024-01-02T07:30:00.000Z', '2024-01-02T08:00:00.000Z'),
  attempt('e04', CA, 'T1', 'p1', 'S1', 'A1', '2024-01-02', '2024-01-02T15:00:00.000Z', ['noAnswer']),
  status('e05', 'T1', 'p2', 'S1', 'preScreening', '2024-01-03T09:00:00.000Z'),
  created('e06', 'T1', 'p3', 'S2', '2024-01-03T11:00:00.000Z', '2024-01-03T11:00:00.000Z'),
  attempt('e07', PCA, 'T1', 'p1', 'S1', 'A2', '2024-01-03', '2024-01-03T10:00:00.000Z', ['appointmentScheduled']),
  attempt('e08', CA, 'T1', 'p1', 'S1', 'A2', '2024-01-03', '2024-01-03T10:05:00.000Z', ['appointmentScheduled', 'requestedCallBack']),
  status('e09', 'T1', 'p2', 'S1', 'preScreening', '2024-01-04T09:00:00.000Z'),
  created('e10', 'T1', 'p6', 'S1', '2024-01-04T12:00:00.000Z', '2024-01-04T12:00:00.000Z'),
  attempt('e11', CA, 'T1', 'p3', 'S2', 'A3', '2024-01-04', '2024-01-04T16:00:00.000Z', ['callDropped']),
  ack('e12', 'T1', 'p4', 'S1', '2024-01-05T08:00:00.000Z'),
  status('e13', 'T1', 'p6', 'S2', 'archive', '2024-01-05T12:00:00.000+02:00', '2024-01-05T10:01:00+00:00'),
  status('e14', 'T1', 'p3', 'S2', 'inScreening', '2024-01-05T10:00:00.000Z'),
  status('e15', 'T1', 'p2', 'S1', 'inScreening', '2024-01-06T10:00:00.000Z'),
  status('e16', 'T1', 'p4', 'S2', 'preScreening', '2024-01-06T09:00:00.000Z'),
  status('e17', 'T1', 'p3', 'S2', 'preScreening', '2024-01-06T12:00:00.000Z'),
  status('e18', 'T1', 'p3', 'S2', 'someNewStatus', '2024-01-07T12:00:00.000Z'),
  {
    event_id: 'e19',
    event_type: 'v1.patient.subjectIdUpdated',
    published_time: '2024-01-07T13:00:00.000Z',
    message: { trialId: 'T1', referralSubjectId: 'p1', subjectId: 'SUBJ-001' },
  },
  status('e20', 'T1', 'p2', 'S1', 'screenFailure', '2024-01-08T10:00:00.000Z'),
  created('e21', 'T2', 'p5', 'S9', '2024-01-08T08:00:00.000Z', '2024-01-08T09:00:00.000Z'),
  attempt('e22', CA, 'T2', 'p5', 'S9', 'A5a', '2024-01-08', '2024-01-08T11:00:00.000Z', ['noAnswer']),
  status('e23', 'T1', 'p2', 'S1', 'inScreening', '2024-01-09T10:00:00.000Z'),
  status('e24', 'T1', 'p1', 'S1', 'enrolled', '2024-01-10T00:00:00.000Z'),
  attempt('e25', CA, 'T2', 'p5', 'S9', 'A5b', '2024-01-10', '2024-01-10T11:00:00.000Z', ['leftVoicemail']),
  status('e26', 'T1', 'p1', 'S1', 'completed', undefined),
  status('e27', 'T1', 'p2', 'S1', 'firstVisitScheduled', '2024-01-05T10:00:00.000Z', '2024-01-20T00:00:00.000Z'),
  attempt('e28', CA, 'T2', 'p5', 'S9', 'A5c', '2024-01-22', '2024-01-22T09:00:00.000Z', []),
];

/** Stream B, created later (a new filter): a re-delivery of e25 and the v2 backfill. */
const streamB: Ev[] = [
  streamA[24] as Ev,
  created(
    'e29',
    'T1',
    'p1',
    'S1',
    '2024-01-01T09:00:00.000Z',
    '2024-01-01T10:00:00.000Z',
    'potentialCandidate',
    'v2.patient.created',
    { referralSource: 'web', sponsorSiteId: 'SP-1' },
    '2024-03-02T00:00:00.000Z',
  ),
  created(
    'e30',
    'T1',
    'p2',
    'S1',
    '2024-01-02T07:30:00.000Z',
    '2024-01-02T08:00:00.000Z',
    'potentialCandidate',
    'v2.patient.created',
    { referralSource: 'partner' },
    '2024-03-02T00:00:01.000Z',
  ),
];

/** Every row of the fixture, in stream order. */
export const FIXTURE_EVENTS: RawEventRow[] = [
  ...streamA.map((e, i) => ({ ...e, stream_id: 'stream-a', stream_position: i + 1, extracted_at: '2024-03-01T00:00:00.000Z' })),
  ...streamB.map((e, i) => ({ ...e, stream_id: 'stream-b', stream_position: i + 1, extracted_at: '2024-03-02T00:00:00.000Z' })),
];

function lit(v: string | null): string {
  return v === null ? 'null' : `'${v.replaceAll("'", "''")}'`;
}

/** The envelope as the API would send it (type under `eventType`, or `name`). */
export function envelopeOf(e: RawEventRow): Record<string, unknown> {
  const env: Record<string, unknown> = { id: e.event_id, publishedTime: e.published_time };
  env[e.typeKey ?? 'eventType'] = e.event_type;
  env['message'] = e.message;
  return env;
}

/** One INSERT statement that appends `rows` to raw.events. */
export function insertRawEventsSql(rows: readonly RawEventRow[], runId = 'fixture-run'): string {
  const values = rows.map(
    (e) =>
      `(${lit(e.stream_id)}, ${e.stream_position}, ${lit(e.event_id)}, ${lit(e.event_type)}, ` +
      `cast(${lit(e.published_time)} as timestamptz), cast(${lit(e.message === null ? null : JSON.stringify(e.message))} as json), ` +
      `cast(${lit(JSON.stringify(envelopeOf(e)))} as json), ${lit(runId)}, cast(${lit(e.extracted_at)} as timestamptz))`,
  );
  return `insert into raw.events (stream_id, stream_position, event_id, event_type, published_time, message, envelope, run_id, extracted_at) values\n${values.join(',\n')}`;
}

/** Three site-list fetches: S-A changes its phone, S-B disappears, S-C has bad geo. */
export const SITE_SNAPSHOTS_SQL = `
insert into raw.site_snapshots
  (run_id, fetched_at, microsite_id, trial_id, site_id, display_name, site_name, sponsor_site_id,
   street, address1, address2, city, state, postal_code, country, phone_number, latitude, longitude, record)
values
  ('r1', '2024-01-01T00:00:00Z', 'M1', 'T1', 'W-A', 'Site A', 'Site A Clinic', 'SP-1', '1 Main St', '1 Main St', null, 'Boston', 'MA', '02110', 'US', '555-0001', 42.36, -71.06, '{}'),
  ('r1', '2024-01-01T00:00:00Z', 'M1', 'T1', 'W-B', 'Site B', 'Site B Clinic', 'SP-2', '2 Main St', '2 Main St', null, 'Denver', 'CO', '80202', 'US', '555-0002', 39.74, -104.99, '{}'),
  ('r2', '2024-01-02T00:00:00Z', 'M1', 'T1', 'W-A', 'Site A', 'Site A Clinic', 'SP-1', '1 Main St', '1 Main St', null, 'Boston', 'MA', '02110', 'US', '555-0001', 42.36, -71.06, '{}'),
  ('r2', '2024-01-02T00:00:00Z', 'M1', 'T1', 'W-C', 'Site C', 'Site C Clinic', null, '3 Main St', '3 Main St', 'Suite 4', 'Nowhere', null, null, 'US', null, 0, 0, '{}'),
  ('r3', '2024-01-03T00:00:00Z', 'M1', 'T1', 'W-A', 'Site A', 'Site A Clinic', 'SP-1', '1 Main St', '1 Main St', null, 'Boston', 'MA', '02110', 'US', '555-9999', 42.36, -71.06, '{}'),
  ('r3', '2024-01-03T00:00:00Z', 'M1', 'T1', 'W-C', 'Site C', 'Site C Clinic', null, '3 Main St', '3 Main St', 'Suite 4', 'Nowhere', null, null, 'US', null, 95, 0, '{}')
`;
