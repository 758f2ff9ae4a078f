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
import { ConfigError } from '../errors.js';
import { silentLogger } from '../log/logger.js';
import { EventStore } from './eventStore.js';
import { FaultRegistry, parseFaultSpec, validateFaultRule, type FaultController, type FaultRule } from './faults.js';
import { JwtVerifier } from './jwtIssuer.js';
import { Rng } from './prng.js';
import { MockApiOptionsSchema, type MockApiOptions, type ResolvedMockApiOptions } from './options.js';
import { MockServer, type MockApiStats, type ServerSettings } from './server.js';
import { generateTrialSites, trialIdOf, type TrialSite } from './sites.js';
import { generateStory } from './story.js';
import { generateSynthetic } from './synthetic.js';
import { deriveTruth, expectedEvents, type ExpectedEventsFilter } from './truth.js';
import type { GroundTruth, SiteRecord, TruthContactAttempt, TruthEvent, TruthPatient } from './types.js';

export { badToken } from './tokenEndpoint.js';
export { expectedEvents, MockApiOptionsSchema, parseFaultSpec, validateFaultRule };
export type { ExpectedEventsFilter, FaultController, FaultRule, MockApiOptions, MockApiStats, ResolvedMockApiOptions };
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

/** A running simulator. */
export interface MockApi {
  /** The API's `{base_url}` (docs/upstream.md), e.g. `http://127.0.0.1:41234` (no trailing slash). */
  baseUrl: string;
  /** The API's `{auth_url}` (docs/upstream.md "Tokens"); the token endpoint is `${authUrl}/oauth/token` (same server). */
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

/**
 * Validates `o` and fills the defaults ({@link MockApiOptionsSchema}).
 *
 * @throws ConfigError naming every invalid option at once
 */
function resolveOptions(o: MockApiOptions): ResolvedMockApiOptions {
  const parsed = MockApiOptionsSchema.safeParse(o);
  if (!parsed.success) {
    throw new ConfigError(`invalid mock-api options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'} ${i.message}`).join('; ')}`);
  }
  const { faults: _faults, now: _now, logger: _logger, ...resolved } = parsed.data;
  return resolved;
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
 * Generates the data set and starts the simulator (docs/upstream.md "Tokens", "Site list", "Reading the stream": `POST /oauth/token`,
 * `GET /microsites-api/v1/:micrositeId/sites/:trialId`, `GET /rpi/events`).
 *
 * Events endpoint details the interface leaves open (docs/upstream.md "Reading the stream", "Errors and limits"): `limit` defaults to
 * `defaultLimit`, is clamped to `maxLimit`, and must be a positive integer (else 400);
 * missing `eventTypes`/`trialIds`, an unknown `startingAfter` id or an invalid cursor give
 * 400 `{"error":"invalid_request"}`; unknown trial ids or types match nothing (200, empty);
 * `nextPage` is `${baseUrl}/rpi/events?cursor=<opaque>`, present on every page; the cursor
 * carries the filter and the id of the last event seen and stays valid forever.
 * Tokens: 401 for a missing, unknown, expired or revoked bearer token (docs/upstream.md "Tokens").
 * Site list: an `Authorization` header → 400; missing or unlisted `Origin` → 403; unknown
 * study website or trial → 404 (docs/upstream.md "Site list").
 *
 * @throws ConfigError when an option is invalid
 * @returns the running simulator; call `close()` when done
 */
// eslint-disable-next-line max-lines-per-function -- the simulator's: split when it moves to a package of its own
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
    generateSynthetic(store, {
      seed: opts.seed,
      count: opts.syntheticEvents,
      trialIds,
      sites: trialSites,
      startTimeMs: startMs,
      ...(opts.syntheticLateTail !== undefined ? { lateTail: opts.syntheticLateTail } : {}),
    });
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
  const verifier = opts.trustedIssuer !== undefined ? await JwtVerifier.load(opts.trustedIssuer, opts.audience, now) : undefined;
  const faults = new FaultRegistry({
    revokeTokens: () => server?.revokeTokens(),
    setTokenLifetime: (s) => {
      settings.tokenLifetimeSeconds = s;
      opts.tokenLifetimeSeconds = s;
    },
    now,
  });
  server = new MockServer(settings, store, sites, () => visible, faults, logger, now, verifier);
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
