/**
 * The flags of the `mock-api` command, derived from {@link MockApiOptionsSchema} (names,
 * types, descriptions, defaults), and their mapping back onto {@link MockApiOptions}. Every
 * flag is also an environment variable `RECRUIT_ETL_<FLAG_IN_UPPER_SNAKE>` (merged by the CLI,
 * src/cli/context.ts), e.g. `RECRUIT_ETL_SEED`, `RECRUIT_ETL_TOKEN_LIFETIME`.
 *
 * @module
 */
import { z } from 'zod';
import { ConfigError } from './errors.js';
import { flagMeta, MockApiOptionsSchema, type FlagMeta, type MockApiOptions } from './options.js';

/** One flag of the `mock-api` command. */
export interface MockApiFlag {
  /** The flag as typed, e.g. `--sites-per-trial`. */
  flag: string;
  /** The camelCase key yargs produces (and {@link mockApiOptionsFromFlags} reads), e.g. `sitesPerTrial`. */
  key: string;
  /** Where the value goes in {@link MockApiOptions}: `['sitesPerTrial']`, `['growEvery', 'intervalMs']`. */
  path: readonly [string] | readonly [string, string];
  type: 'number' | 'string' | 'boolean' | 'array';
  /** One line for `--help`. */
  description: string;
  /** Default shown in help (the simulator applies it; leave it unset in yargs to keep "not given" visible). */
  default?: string | number | boolean;
  /** True when the flag is needed whenever another flag of the same option object is given. */
  required: boolean;
  /** Array flags: split values at commas. */
  commaSeparated: boolean;
  /** Array flags: turns one value into one item. */
  parseItem?: (text: string) => unknown;
}

/** Flag values after parsing (yargs' camelCase keys of {@link MOCK_API_FLAGS}). Absent = default. */
export type MockApiFlagValues = Readonly<Record<string, string | number | boolean | readonly string[] | undefined>>;

const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** The schema under `.optional()` / `.default()`, with the default when there is one. */
function unwrap(schema: z.ZodType): { inner: z.ZodType; default?: unknown } {
  let s = schema;
  let def: unknown;
  for (;;) {
    if (s instanceof z.ZodDefault) {
      def ??= s.def.defaultValue;
      s = s.def.innerType as z.ZodType;
    } else if (s instanceof z.ZodOptional) s = s.def.innerType as z.ZodType;
    else return def === undefined ? { inner: s } : { inner: s, default: def };
  }
}

function flagOf(path: MockApiFlag['path'], schema: z.ZodType): MockApiFlag | undefined {
  const meta: FlagMeta = flagMeta.get(schema) ?? {};
  if (meta.cli === false) return undefined;
  const { inner, default: def } = unwrap(schema);
  const type =
    inner instanceof z.ZodNumber
      ? 'number'
      : inner instanceof z.ZodString
        ? 'string'
        : inner instanceof z.ZodBoolean
          ? 'boolean'
          : inner instanceof z.ZodArray
            ? 'array'
            : undefined;
  if (type === undefined) throw new Error(`mock-api option ${path.join('.')}: no flag type for this schema; register { cli: false }`);
  const name = meta.flag ?? path.map(kebab).join('-');
  const f: MockApiFlag = {
    flag: `--${name}`,
    key: camel(name),
    path,
    type,
    description: meta.help ?? schema.description ?? '',
    required: !schema.safeParse(undefined).success,
    commaSeparated: meta.commaSeparated === true,
  };
  if (def !== undefined) f.default = Array.isArray(def) ? def.join(',') : (def as string | number | boolean);
  if (meta.parseItem !== undefined) f.parseItem = meta.parseItem;
  return f;
}

/** Derives the flags from the schema's shape: one per field, one per member of an object field. */
function deriveFlags(): MockApiFlag[] {
  const flags: MockApiFlag[] = [];
  for (const [key, field] of Object.entries(MockApiOptionsSchema.shape) as Array<[string, z.ZodType]>) {
    const { inner } = unwrap(field);
    if (inner instanceof z.ZodObject && flagMeta.get(field) === undefined) {
      for (const [sub, member] of Object.entries(inner.shape as Record<string, z.ZodType>)) {
        const f = flagOf([key, sub], member);
        if (f !== undefined) flags.push(f);
      }
    } else {
      const f = flagOf([key], field);
      if (f !== undefined) flags.push(f);
    }
  }
  return flags;
}

/** Every flag of `mock-api`, in the schema's order. */
export const MOCK_API_FLAGS: readonly MockApiFlag[] = deriveFlags();

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
  ...MOCK_API_FLAGS.map(
    (f) => `  ${f.flag.padEnd(22)} ${f.description}${f.default === undefined ? '' : ` (default ${String(f.default)})`}`,
  ),
  '',
  MOCK_API_FAULT_HELP,
].join('\n');

const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);

/**
 * Maps parsed `mock-api` flags (yargs' camelCase keys) onto {@link MockApiOptions}; the
 * logger is the caller's. Only given flags appear in the result; types and ranges are
 * checked by `startMockApi` (the schema).
 *
 * @throws ConfigError when a fault spec is invalid, or a flag of an option object comes
 *   without the flag it needs (`--grow-events` without `--grow-every-ms`)
 */
export function mockApiOptionsFromFlags(flags: MockApiFlagValues): MockApiOptions {
  const o: Record<string, unknown> = {};
  const given = new Set<MockApiFlag>();
  for (const f of MOCK_API_FLAGS) {
    const raw = flags[f.key];
    if (raw === undefined) continue;
    let value: unknown = raw;
    if (f.type === 'array') {
      let items = list(raw);
      if (f.commaSeparated)
        items = items
          .flatMap((x) => x.split(','))
          .map((x) => x.trim())
          .filter((x) => x.length > 0);
      if (items.length === 0) continue;
      value = f.parseItem === undefined ? items : items.map(f.parseItem);
    }
    given.add(f);
    const [key, sub] = f.path;
    if (sub === undefined) o[key] = value;
    else o[key] = { ...(o[key] as Record<string, unknown> | undefined), [sub]: value };
  }
  for (const f of MOCK_API_FLAGS) {
    if (!f.required || f.path.length < 2 || given.has(f) || o[f.path[0]] === undefined) continue;
    const other = [...given].find((g) => g.path[0] === f.path[0])!;
    throw new ConfigError(`${other.flag} needs ${f.flag}`);
  }
  return o as MockApiOptions;
}
