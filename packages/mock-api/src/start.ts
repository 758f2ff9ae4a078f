/**
 * `startMockApi`: generates the data set (the story, or synthetic events) and starts the
 * simulator's server (docs/upstream.md "Tokens", "Site list", "Reading the stream").
 *
 * @module
 */
import { ConfigError } from './errors.js';
import { silentLogger } from './logger.js';
import { EventStore } from './eventStore.js';
import { FaultRegistry, validateFaultRule, type FaultController, type FaultRule } from './faults.js';
import { JwtVerifier } from './jwtIssuer.js';
import { Rng } from './prng.js';
import { MockApiOptionsSchema, type MockApiOptions, type ResolvedMockApiOptions } from './options.js';
import { MockServer, type MockApiStats, type ServerSettings } from './server.js';
import { generateTrialSites, trialIdOf, type TrialSite } from './sites.js';
import { generateStory } from './story.js';
import { generateSynthetic } from './synthetic.js';
import { deriveTruth } from './truth.js';
import type { GroundTruth, SiteRecord, TruthContactAttempt, TruthEvent, TruthPatient } from './types.js';

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
    throw new ConfigError(
      `invalid mock-api options: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'} ${i.message}`).join('; ')}`,
    );
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

/** The generated data set: the event store, and the story's events when there is a story. */
interface DataSet {
  store: EventStore;
  /** The story's events (the ground truth); undefined for synthetic events, parsed lazily. */
  truthEvents: TruthEvent[] | undefined;
  trialIds: string[];
  trialSites: Record<string, TrialSite[]>;
}

/** `opts.syntheticEvents` pre-rendered synthetic events over generated trials and sites. */
function syntheticData(opts: ResolvedMockApiOptions, count: number): DataSet {
  const trialIds: string[] = [];
  const trialSites: Record<string, TrialSite[]> = {};
  for (let t = 0; t < opts.trials; t++) {
    const id = trialIdOf(t + 1);
    trialIds.push(id);
    trialSites[id] = generateTrialSites(new Rng(opts.seed, 100 + t), t + 1, opts.sitesPerTrial);
  }
  const store = new EventStore(opts.seed, count);
  generateSynthetic(store, {
    seed: opts.seed,
    count,
    trialIds,
    sites: trialSites,
    startTimeMs: Date.parse(opts.startTime),
    ...(opts.syntheticLateTail !== undefined ? { lateTail: opts.syntheticLateTail } : {}),
  });
  return { store, truthEvents: undefined, trialIds, trialSites };
}

/** The story (patients, statuses, contact attempts) rendered into an event store. */
function storyData(opts: ResolvedMockApiOptions): DataSet {
  const story = generateStory({
    seed: opts.seed,
    trials: opts.trials,
    sitesPerTrial: opts.sitesPerTrial,
    patientsPerTrial: opts.patientsPerTrial,
    startTimeMs: Date.parse(opts.startTime),
    drift: opts.drift,
  });
  const store = new EventStore(opts.seed, story.events.length);
  for (const t of story.trialIds) store.trialIdx(t);
  for (const ev of story.events) store.append(JSON.stringify(ev.envelope), store.typeIdx(ev.eventType), store.trialIdx(ev.trialId));
  return { store, truthEvents: story.events, trialIds: story.trialIds, trialSites: story.sites };
}

/** The data set `opts` asks for: synthetic events when `syntheticEvents` is set, else the story. */
function generateData(opts: ResolvedMockApiOptions): DataSet {
  return opts.syntheticEvents !== undefined ? syntheticData(opts, opts.syntheticEvents) : storyData(opts);
}

/** The server's settings from the resolved options (`tokenLifetimeSeconds` changes at run time). */
function serverSettings(opts: ResolvedMockApiOptions): ServerSettings {
  return {
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
export async function startMockApi(options: MockApiOptions = {}): Promise<MockApi> {
  const opts = resolveOptions(options);
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? Date.now;
  const faultRules = (options.faults ?? []).map(validateFaultRule);
  const t0 = performance.now();
  const { store, truthEvents, trialIds, trialSites } = generateData(opts);
  const sites: Record<string, SiteRecord[]> = {};
  for (const t of trialIds) sites[t] = (trialSites[t] ?? []).map((s) => s.record);

  let visible = Math.floor(store.count * opts.releaseFraction);
  const grow = (events?: number): number => {
    const n = events === undefined ? store.count - visible : Math.max(0, Math.min(Math.floor(events), store.count - visible));
    visible += n;
    return n;
  };

  const settings = serverSettings(opts);
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
