/**
 * Flag descriptions of the `mock-api` command and their mapping onto
 * {@link MockApiOptions}, for the CLI author (DESIGN.md "CLI contract": every option is
 * also an environment variable `RECRUIT_ETL_<OPTION>`; yargs does that).
 *
 * @module
 */
import { ConfigError } from '../errors.js';
import { parseFaultSpec, type FaultRule } from './faults.js';
import type { MockApiOptions } from './index.js';

/** One flag of the `mock-api` command. */
export interface MockApiFlag {
  /** The flag as typed, e.g. `--sites-per-trial`. */
  flag: string;
  /** The camelCase key yargs produces (and {@link mockApiOptionsFromFlags} reads). */
  key: keyof MockApiFlagValues;
  type: 'number' | 'string' | 'boolean' | 'array';
  /** One line for `--help`. */
  description: string;
  /** Default shown in help (the simulator applies it; leave it unset in yargs to keep "not given" visible). */
  default?: string | number | boolean;
}

/** Flag values after parsing (camelCase keys, as yargs gives them). Absent = default. */
export interface MockApiFlagValues {
  host?: string;
  port?: number;
  seed?: number;
  trials?: number;
  sitesPerTrial?: number;
  patientsPerTrial?: number;
  startTime?: string;
  clientId?: string;
  clientSecret?: string;
  audience?: string;
  tokenLifetime?: number;
  defaultLimit?: number;
  maxLimit?: number;
  micrositeId?: string;
  allowedOrigin?: string | string[];
  drift?: boolean;
  releaseFraction?: number;
  growEveryMs?: number;
  growEvents?: number;
  syntheticEvents?: number;
  fault?: string | string[];
}

/** Every flag of `mock-api`, in help order. */
export const MOCK_API_FLAGS: readonly MockApiFlag[] = [
  { flag: '--host', key: 'host', type: 'string', description: 'interface to bind', default: '127.0.0.1' },
  { flag: '--port', key: 'port', type: 'number', description: 'TCP port (0 = any free port)', default: 0 },
  { flag: '--seed', key: 'seed', type: 'number', description: 'seed of the generated data (same seed, same data)', default: 1 },
  { flag: '--trials', key: 'trials', type: 'number', description: 'number of trials (TRIAL-001, TRIAL-002, ...)', default: 2 },
  { flag: '--sites-per-trial', key: 'sitesPerTrial', type: 'number', description: 'sites per trial', default: 4 },
  { flag: '--patients-per-trial', key: 'patientsPerTrial', type: 'number', description: 'referred patients per trial', default: 150 },
  { flag: '--start-time', key: 'startTime', type: 'string', description: 'first referral time (ISO 8601)', default: '2026-01-05T08:00:00.000Z' },
  { flag: '--client-id', key: 'clientId', type: 'string', description: 'accepted client_id', default: 'demo-client-id' },
  { flag: '--client-secret', key: 'clientSecret', type: 'string', description: 'accepted client_secret (demo value; not a real secret)', default: 'demo-client-secret' },
  { flag: '--audience', key: 'audience', type: 'string', description: 'accepted audience', default: 'https://reporting.example-recruit.test' },
  { flag: '--token-lifetime', key: 'tokenLifetime', type: 'number', description: 'token lifetime in seconds (expires_in)', default: 3600 },
  { flag: '--default-limit', key: 'defaultLimit', type: 'number', description: 'page size when no limit is sent', default: 100 },
  { flag: '--max-limit', key: 'maxLimit', type: 'number', description: 'largest page size; larger limits are clamped', default: 1000 },
  { flag: '--microsite-id', key: 'micrositeId', type: 'string', description: 'study-website id of the site list', default: 'ms-demo' },
  { flag: '--allowed-origin', key: 'allowedOrigin', type: 'array', description: 'origin allowed to read the site list (repeatable)', default: 'https://study.example.org' },
  { flag: '--drift', key: 'drift', type: 'boolean', description: 'schema drift: name-keyed envelopes, unknown keys and types (--no-drift to turn off)', default: true },
  { flag: '--release-fraction', key: 'releaseFraction', type: 'number', description: 'share (0..1) of the stream visible at start', default: 1 },
  { flag: '--grow-every-ms', key: 'growEveryMs', type: 'number', description: 'release more events every N ms (with --grow-events, default 10)' },
  { flag: '--grow-events', key: 'growEvents', type: 'number', description: 'events released per --grow-every-ms tick' },
  { flag: '--synthetic-events', key: 'syntheticEvents', type: 'number', description: 'serve N synthetic events instead of the story data set (benchmarks)' },
  {
    flag: '--fault',
    key: 'fault',
    type: 'array',
    description: 'inject a fault, repeatable: <endpoint>:<kind>[=<value>][:<key>=<value>]..., e.g. events:status=503:times=3',
  },
];

/** The fault kinds and their parameters, for `--help` (details: the `FaultRule` TSDoc in faults.ts). */
export const MOCK_API_FAULT_HELP: string = [
  'Faults: --fault <endpoint>:<kind>[=<main value>][:<key>=<value>]... (repeatable), endpoint',
  'events|token|sites.',
  '  any endpoint: status=<code>[:retryAfter=<s|HTTP-date>][:body=<text>], latency=<ms>,',
  '    headersNever, bodyStall[=<at>], resetMidBody[=<at>], truncated[=<at>][:chunked=true],',
  '    nonJson[=<body>], html200, oversized[=<size>], redirect[=<url>],',
  '    drip[=<ms>] (the body one byte every ms, default 5000)',
  '  events: revokeTokens, always401 (times=inf), missingPagination, eventsNotArray,',
  '    eventWithoutId, duplicateIdWithinPage, duplicateIdAcrossPages, sameIdOtherPayload,',
  '    nextPage=<otherOrigin[:url=]|otherScheme|otherPort[:port=]|userInfo|relative|unchanged|',
  '      cycle|longCycle[:length=<n>, default 3]|oversizedUrl[:size=]>,',
  '    loneSurrogate[=<event>] (message member "note":"x\\ud800y" in that event, default 1),',
  '    duplicateEventsKey ("events" twice, the second []),',
  '    escapedKeys ("\\u0065vents", "\\u0070agination", "\\u0069d", "\\u0065ventType"),',
  '    duplicateIdKey[=<event>] ("id" twice, the second "<id>-dup"),',
  '    reorderedRedelivery (the previous event again, keys reversed, extra whitespace),',
  '    emptyPagesForever (times=inf: empty pages, a new ?c= nextPage each time),',
  '    padEvents=<bytes> (a "pad" member in every message: pages of that size)',
  '  token: echoSecret (400 echoing client_id and client_secret),',
  '    badToken=<crlf|nonAscii|tooLong>, tokenLifetime=<seconds> (tokens issued from then on)',
  '  sites: loneSurrogate (the first record\'s displayName "x\\ud800y")',
  'Keys: times (n|inf), after, code, retryAfter, body, ms, at, chunked, size, variant, url, port,',
  'seconds, event, length, bytes. E.g. events:status=503:times=3, events:padEvents=20000000:times=30',
].join('\n');

/** Help text listing the flags (for the CLI's `--help` epilogue or README). */
export const MOCK_API_USAGE: string = [
  'recruit-etl mock-api [options]   serve the simulator of the upstream API',
  '',
  ...MOCK_API_FLAGS.map((f) => `  ${f.flag.padEnd(22)} ${f.description}${f.default === undefined ? '' : ` (default ${String(f.default)})`}`),
  '',
  MOCK_API_FAULT_HELP,
].join('\n');

const list = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * Maps parsed `mock-api` flags onto {@link MockApiOptions} (the logger is the caller's).
 * Range checks happen in `startMockApi`.
 *
 * @throws ConfigError when a fault spec is invalid or `--grow-events` comes without `--grow-every-ms`
 */
export function mockApiOptionsFromFlags(flags: MockApiFlagValues): MockApiOptions {
  const o: MockApiOptions = {};
  if (flags.host !== undefined) o.host = flags.host;
  if (flags.port !== undefined) o.port = flags.port;
  if (flags.seed !== undefined) o.seed = flags.seed;
  if (flags.trials !== undefined) o.trials = flags.trials;
  if (flags.sitesPerTrial !== undefined) o.sitesPerTrial = flags.sitesPerTrial;
  if (flags.patientsPerTrial !== undefined) o.patientsPerTrial = flags.patientsPerTrial;
  if (flags.startTime !== undefined) o.startTime = flags.startTime;
  if (flags.clientId !== undefined) o.clientId = flags.clientId;
  if (flags.clientSecret !== undefined) o.clientSecret = flags.clientSecret;
  if (flags.audience !== undefined) o.audience = flags.audience;
  if (flags.tokenLifetime !== undefined) o.tokenLifetimeSeconds = flags.tokenLifetime;
  if (flags.defaultLimit !== undefined) o.defaultLimit = flags.defaultLimit;
  if (flags.maxLimit !== undefined) o.maxLimit = flags.maxLimit;
  if (flags.micrositeId !== undefined) o.micrositeId = flags.micrositeId;
  const origins = list(flags.allowedOrigin).flatMap((x) => x.split(',')).map((x) => x.trim()).filter((x) => x.length > 0);
  if (origins.length > 0) o.allowedOrigins = origins;
  if (flags.drift !== undefined) o.drift = flags.drift;
  if (flags.releaseFraction !== undefined) o.releaseFraction = flags.releaseFraction;
  if (flags.growEveryMs !== undefined) o.growEvery = { intervalMs: flags.growEveryMs, events: flags.growEvents ?? 10 };
  else if (flags.growEvents !== undefined) throw new ConfigError('--grow-events needs --grow-every-ms');
  if (flags.syntheticEvents !== undefined) o.syntheticEvents = flags.syntheticEvents;
  const faults: FaultRule[] = list(flags.fault).map(parseFaultSpec);
  if (faults.length > 0) o.faults = faults;
  return o;
}
