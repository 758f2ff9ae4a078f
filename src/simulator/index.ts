/**
 * The simulator of the upstream API (`mock-api`): a local server faithful to
 * upstream-interface-spec.md, serving deterministic recruitment data with a ground truth
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
import type { Logger } from 'pino';
import { ConfigError } from '../errors.js';
import { silentLogger } from '../log/logger.js';
import { EventStore } from './eventStore.js';
import { FaultRegistry, parseFaultSpec, validateFaultRule, type FaultController, type FaultRule } from './faults.js';
import { Rng } from './prng.js';
import { MockServer, type MockApiStats, type ServerSettings } from './server.js';
import { generateTrialSites, trialIdOf, type TrialSite } from './sites.js';
import { generateStory } from './story.js';
import { generateSynthetic } from './synthetic.js';
import { deriveTruth, expectedEvents, type ExpectedEventsFilter } from './truth.js';
import type { GroundTruth, SiteRecord, TruthContactAttempt, TruthEvent, TruthPatient } from './types.js';

export { expectedEvents, parseFaultSpec, validateFaultRule };
export type { ExpectedEventsFilter, FaultController, FaultRule, MockApiStats };
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

/** Options of {@link startMockApi}. Every field is optional; defaults in `@default`. */
export interface MockApiOptions {
  /** Interface to bind. @default '127.0.0.1' */
  host?: string;
  /** TCP port; 0 picks a free one. @default 0 */
  port?: number;
  /** Seed of all generated data: same options → byte-identical stream. @default 1 */
  seed?: number;
  /** Number of trials, ids `TRIAL-001`, `TRIAL-002`, …. @default 2 */
  trials?: number;
  /** Sites per trial. @default 4 */
  sitesPerTrial?: number;
  /** Patients (referrals) per trial in the story data set. @default 150 */
  patientsPerTrial?: number;
  /** First referral time (ISO 8601); referrals spread over the following 8 weeks. @default '2026-01-05T08:00:00.000Z' */
  startTime?: string;
  /** Accepted `client_id` (spec §2.1). @default 'demo-client-id' */
  clientId?: string;
  /** Accepted `client_secret` (spec §2.1). @default 'demo-client-secret' */
  clientSecret?: string;
  /** Accepted `audience` (spec §2.1); another audience gets 403. @default 'https://reporting.example-recruit.test' */
  audience?: string;
  /** Token lifetime in seconds, `expires_in` (spec §2.2, §3). @default 3600 */
  tokenLifetimeSeconds?: number;
  /** Page size when no `limit` is sent (spec §8 leaves it open). @default 100 */
  defaultLimit?: number;
  /** Largest page size: a larger `limit` is clamped to it, not refused. @default 1000 */
  maxLimit?: number;
  /** The study-website (microsite) id served by the site list (spec §4.2). @default 'ms-demo' */
  micrositeId?: string;
  /** Origins allowed to read the site list (spec §4.2, §5.6). @default ['https://study.example.org'] */
  allowedOrigins?: string[];
  /**
   * Schema drift (spec §2.4, §9): some envelopes carry the type under `name`, some
   * envelopes and messages carry unknown keys, and never-requested types
   * (`v1.patient.subjectIdUpdated`, `v1.patient.commentUpdated`) appear. Off: only
   * `eventType`, no unknown keys or types; both contact-attempt spellings, v2 creation
   * and unknown enum values remain (spec §6, §9.3). @default true
   */
  drift?: boolean;
  /** Share (0..1) of the generated stream visible at start; `grow()` releases the rest. @default 1 */
  releaseFraction?: number;
  /** Release `events` more events every `intervalMs` ms while running (timer is unref'd). */
  growEvery?: { intervalMs: number; events: number };
  /**
   * Instead of the story data set, generate exactly this many simple events of the four
   * default types (benchmarks; up to 10,000,000). `truth.events`, `truth.patients` and
   * `truth.contactAttempts` are then computed lazily on first access.
   */
  syntheticEvents?: number;
  /** Fault rules active from the start (see {@link FaultRule}). */
  faults?: FaultRule[];
  /** Clock in epoch ms (token expiry); default `Date.now`. */
  now?: () => number;
  /** Logger (debug line per request, never tokens or payloads); default silent. */
  logger?: Logger;
}

/** The options as resolved (defaults filled). `port` is the bound port; `tokenLifetimeSeconds` follows runtime changes. */
export interface ResolvedMockApiOptions {
  host: string;
  port: number;
  seed: number;
  trials: number;
  sitesPerTrial: number;
  patientsPerTrial: number;
  startTime: string;
  clientId: string;
  clientSecret: string;
  audience: string;
  tokenLifetimeSeconds: number;
  defaultLimit: number;
  maxLimit: number;
  micrositeId: string;
  allowedOrigins: string[];
  drift: boolean;
  releaseFraction: number;
  growEvery?: { intervalMs: number; events: number };
  syntheticEvents?: number;
}

/** A running simulator. */
export interface MockApi {
  /** The spec's `{base_url}`, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  baseUrl: string;
  /** The spec's `{auth_url}`; the token endpoint is `${authUrl}/oauth/token` (same server). */
  authUrl: string;
  /** Resolved options (credentials, audience, microsite id, allowed origins, …). */
  options: ResolvedMockApiOptions;
  /** What was generated (see {@link GroundTruth}). */
  truth: GroundTruth;
  /**
   * Releases the next `events` not-yet-visible events (default: all).
   *
   * @returns how many were released (0 when everything is visible)
   */
  grow(events?: number): number;
  /** Runtime fault control (see {@link FaultRule}). */
  faults: FaultController;
  /** Live request counters. */
  stats: MockApiStats;
  /** Closes the server and all sockets promptly, hanging ones included. Idempotent. */
  close(): Promise<void>;
}

const DAY_RE = /^\d{4}-\d{2}-\d{2}T/;

function resolveOptions(o: MockApiOptions): ResolvedMockApiOptions {
  const problems: string[] = [];
  const int = (name: string, v: number | undefined, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const x = v ?? def;
    if (!Number.isInteger(x) || x < min || x > max) problems.push(`${name} must be an integer in ${min}..${max}`);
    return x;
  };
  const r: ResolvedMockApiOptions = {
    host: o.host ?? '127.0.0.1',
    port: int('port', o.port, 0, 0, 65535),
    seed: int('seed', o.seed, 1, -2147483648, 4294967295),
    trials: int('trials', o.trials, 2, 1, 999),
    sitesPerTrial: int('sitesPerTrial', o.sitesPerTrial, 4, 1, 500),
    patientsPerTrial: int('patientsPerTrial', o.patientsPerTrial, 150, 0, 1_000_000),
    startTime: o.startTime ?? '2026-01-05T08:00:00.000Z',
    clientId: o.clientId ?? 'demo-client-id',
    clientSecret: o.clientSecret ?? 'demo-client-secret',
    audience: o.audience ?? 'https://reporting.example-recruit.test',
    tokenLifetimeSeconds: int('tokenLifetimeSeconds', o.tokenLifetimeSeconds, 3600, 1),
    defaultLimit: int('defaultLimit', o.defaultLimit, 100, 1),
    maxLimit: int('maxLimit', o.maxLimit, 1000, 1),
    micrositeId: o.micrositeId ?? 'ms-demo',
    allowedOrigins: [...(o.allowedOrigins ?? ['https://study.example.org'])],
    drift: o.drift ?? true,
    releaseFraction: o.releaseFraction ?? 1,
  };
  if (!DAY_RE.test(r.startTime) || Number.isNaN(Date.parse(r.startTime))) problems.push('startTime must be an ISO 8601 timestamp');
  if (!(r.releaseFraction >= 0 && r.releaseFraction <= 1)) problems.push('releaseFraction must be within 0..1');
  if (r.defaultLimit > r.maxLimit) problems.push('defaultLimit must not exceed maxLimit');
  if (o.growEvery !== undefined) {
    const g = o.growEvery;
    if (!Number.isInteger(g.intervalMs) || g.intervalMs < 1 || !Number.isInteger(g.events) || g.events < 1)
      problems.push('growEvery needs positive integers intervalMs and events');
    r.growEvery = { ...g };
  }
  if (o.syntheticEvents !== undefined) r.syntheticEvents = int('syntheticEvents', o.syntheticEvents, 0, 0, 50_000_000);
  if (problems.length > 0) throw new ConfigError(`invalid mock-api options: ${problems.join('; ')}`);
  return r;
}

/** Ground truth over a store; story events given, synthetic ones parsed lazily. */
class Truth implements GroundTruth {
  private derived: { patients: TruthPatient[]; contactAttempts: TruthContactAttempt[] } | undefined;
  constructor(
    readonly trialIds: string[],
    readonly sites: Record<string, SiteRecord[]>,
    private eventList: TruthEvent[] | undefined,
    private readonly store: EventStore,
    private readonly visible: () => number,
  ) {}

  get events(): TruthEvent[] {
    if (this.eventList === undefined) {
      const list: TruthEvent[] = new Array<TruthEvent>(this.store.count);
      for (let i = 0; i < this.store.count; i++) {
        const envelope = JSON.parse(this.store.jsonAt(i)) as Record<string, unknown>;
        const msg = envelope['message'] as Record<string, unknown>;
        const ev: TruthEvent = {
          id: envelope['id'] as string,
          eventType: this.store.typeAt(i),
          typeKey: 'eventType' in envelope ? 'eventType' : 'name',
          trialId: msg['trialId'] as string,
          publishedTime: envelope['publishedTime'] as string,
          envelope,
        };
        if (typeof msg['referralSubjectId'] === 'string') ev.referralSubjectId = msg['referralSubjectId'];
        list[i] = ev;
      }
      this.eventList = list;
    }
    return this.eventList;
  }

  visibleCount(): number {
    return this.visible();
  }

  get patients(): TruthPatient[] {
    this.derived ??= deriveTruth(this.events);
    return this.derived.patients;
  }

  get contactAttempts(): TruthContactAttempt[] {
    this.derived ??= deriveTruth(this.events);
    return this.derived.contactAttempts;
  }
}

/**
 * Generates the data set and starts the simulator (spec §4: `POST /oauth/token`,
 * `GET /microsites-api/v1/:micrositeId/sites/:trialId`, `GET /rpi/events`).
 *
 * Events endpoint details the spec leaves open (spec §4.3, §7, §8): `limit` defaults to
 * `defaultLimit`, is clamped to `maxLimit`, and must be a positive integer (else 400);
 * missing `eventTypes`/`trialIds`, an unknown `startingAfter` id or an invalid cursor give
 * 400 `{"error":"invalid_request"}`; unknown trial ids or types match nothing (200, empty);
 * `nextPage` is `${baseUrl}/rpi/events?cursor=<opaque>`, present on every page; the cursor
 * carries the filter and the id of the last event seen and stays valid forever.
 * Tokens: 401 for a missing, unknown, expired or revoked bearer token (spec §5.4).
 * Site list: an `Authorization` header → 400; missing or unlisted `Origin` → 403; unknown
 * study website or trial → 404 (spec §4.2, §5.6).
 *
 * @throws ConfigError when an option is invalid
 * @returns the running simulator; call `close()` when done
 */
export async function startMockApi(options: MockApiOptions = {}): Promise<MockApi> {
  const opts = resolveOptions(options);
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? Date.now;
  const startMs = Date.parse(opts.startTime);
  const faultRules = (options.faults ?? []).map(validateFaultRule);

  let store: EventStore;
  let truthEvents: TruthEvent[] | undefined;
  let trialIds: string[];
  let trialSites: Record<string, TrialSite[]>;
  const t0 = performance.now();
  if (opts.syntheticEvents !== undefined) {
    trialIds = [];
    trialSites = {};
    for (let t = 0; t < opts.trials; t++) {
      const id = trialIdOf(t + 1);
      trialIds.push(id);
      trialSites[id] = generateTrialSites(new Rng(opts.seed, 100 + t), t + 1, opts.sitesPerTrial);
    }
    store = new EventStore(opts.seed, opts.syntheticEvents);
    generateSynthetic(store, { seed: opts.seed, count: opts.syntheticEvents, trialIds, sites: trialSites, startTimeMs: startMs });
  } else {
    const story = generateStory({
      seed: opts.seed,
      trials: opts.trials,
      sitesPerTrial: opts.sitesPerTrial,
      patientsPerTrial: opts.patientsPerTrial,
      startTimeMs: startMs,
      drift: opts.drift,
    });
    trialIds = story.trialIds;
    trialSites = story.sites;
    truthEvents = story.events;
    store = new EventStore(opts.seed, story.events.length);
    for (const t of trialIds) store.trialIdx(t);
    for (const ev of story.events) store.append(JSON.stringify(ev.envelope), store.typeIdx(ev.eventType), store.trialIdx(ev.trialId));
  }
  const sites: Record<string, SiteRecord[]> = {};
  for (const t of trialIds) sites[t] = (trialSites[t] ?? []).map((s) => s.record);

  let visible = Math.floor(store.count * opts.releaseFraction);
  const grow = (events?: number): number => {
    const n = events === undefined ? store.count - visible : Math.max(0, Math.min(Math.floor(events), store.count - visible));
    visible += n;
    return n;
  };

  const settings: ServerSettings = {
    host: opts.host,
    port: opts.port,
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    audience: opts.audience,
    tokenLifetimeSeconds: opts.tokenLifetimeSeconds,
    defaultLimit: opts.defaultLimit,
    maxLimit: opts.maxLimit,
    micrositeId: opts.micrositeId,
    allowedOrigins: opts.allowedOrigins,
  };
  let server: MockServer | undefined;
  const faults = new FaultRegistry({
    revokeTokens: () => server?.revokeTokens(),
    setTokenLifetime: (s) => {
      settings.tokenLifetimeSeconds = s;
      opts.tokenLifetimeSeconds = s;
    },
    now,
  });
  server = new MockServer(settings, store, sites, () => visible, faults, logger, now);
  opts.port = await server.listen();
  for (const r of faultRules) faults.add(r);
  logger.info(
    { baseUrl: server.baseUrl, events: store.count, visible, bytes: store.bytes, generationMs: Math.round(performance.now() - t0) },
    'mock-api listening',
  );

  let timer: NodeJS.Timeout | undefined;
  if (opts.growEvery !== undefined) {
    const g = opts.growEvery;
    timer = setInterval(() => grow(g.events), g.intervalMs);
    timer.unref();
  }
  const truth = new Truth(trialIds, sites, truthEvents, store, () => visible);
  const srv = server;
  return {
    baseUrl: srv.baseUrl,
    authUrl: srv.baseUrl,
    options: opts,
    truth,
    grow,
    faults,
    stats: srv.stats,
    close: async () => {
      if (timer !== undefined) clearInterval(timer);
      await srv.close();
    },
  };
}

export { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, MOCK_API_USAGE, mockApiOptionsFromFlags } from './mockApiFlags.js';
export type { MockApiFlag, MockApiFlagValues } from './mockApiFlags.js';
