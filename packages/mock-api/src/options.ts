/**
 * The simulator's options, declared once: {@link MockApiOptionsSchema} gives the types
 * of `startMockApi` (input and resolved), the defaults, the validation, the descriptions
 * and — through mockApiFlags.ts — the flags of `recruit-etl mock-api`.
 *
 * A flag is the option's key in kebab case (`sitesPerTrial` → `--sites-per-trial`) unless
 * {@link flagMeta} names another; an object-valued option gives one flag per member;
 * options registered with `cli: false` (functions) have no flag.
 *
 * @module
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { parseFaultSpec, type FaultRule } from './faults.js';

/** Flag details the schema itself cannot say (registered on a field's outermost schema). */
export interface FlagMeta {
  /** The flag without `--`, when it is not the key in kebab case. */
  flag?: string;
  /** False: the option has no flag (functions, objects of the API only). */
  cli?: false;
  /** Array options: each value may list several items separated by commas. */
  commaSeparated?: boolean;
  /** Array options: turns one flag value into one item (e.g. a fault spec into a rule). */
  parseItem?: (text: string) => unknown;
  /** Help text of the flag, when it is not the option's description. */
  help?: string;
}

/** Registry of {@link FlagMeta}, keyed by field schema. */
export const flagMeta = z.registry<FlagMeta>();

/** Registers `meta` on `schema` (call last in a chain: `.describe()` makes a new instance). */
const flag = <T extends z.ZodType>(schema: T, meta: FlagMeta): T => {
  flagMeta.add(schema, meta);
  return schema;
};

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.number().refine((x) => Number.isInteger(x) && x >= min && x <= max, `must be an integer in ${min}..${max}`);

const isoTime = z.string().refine((s) => /^\d{4}-\d{2}-\d{2}T/.test(s) && !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 timestamp');

/**
 * Options of `startMockApi`. Input: every field optional ({@link MockApiOptions}); output:
 * defaults filled ({@link ResolvedMockApiOptions}).
 */
export const MockApiOptionsSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1').describe('interface to bind'),
    port: int(0, 65535).default(0).describe('TCP port (0 = any free port)'),
    seed: int(-2147483648, 4294967295).default(1).describe('seed of the generated data (same seed, same data)'),
    trials: int(1, 999).default(2).describe('number of trials (TRIAL-001, TRIAL-002, ...)'),
    sitesPerTrial: int(1, 500).default(4).describe('sites per trial'),
    patientsPerTrial: int(0, 1_000_000).default(150).describe('referred patients per trial'),
    startTime: isoTime
      .default('2026-01-05T08:00:00.000Z')
      .describe('first referral time (ISO 8601); referrals spread over the following 8 weeks'),
    clientId: z.string().min(1).default('demo-client-id').describe('accepted client_id'),
    clientSecret: z.string().min(1).default('demo-client-secret').describe('accepted client_secret (demo value; not a real secret)'),
    audience: z.string().min(1).default('https://reporting.example-recruit.test').describe('accepted audience; another audience gets 403'),
    trustedIssuer: z
      .object({
        issuer: flag(z.string().min(1).describe('also accept JWT bearer tokens whose iss is this issuer (another token server)'), {
          flag: 'trusted-issuer',
        }),
        jwksUri: flag(
          z
            .string()
            .regex(/^https?:\/\//, 'must be an http(s) URL')
            .describe("that issuer's JWKS URL; its keys are fetched once at start"),
          { flag: 'trusted-jwks-uri' },
        ),
      })
      .optional()
      .describe(
        'also accept JWT access tokens of another token server, signed by a key of its JWKS, for --audience, not expired (default: only tokens of /oauth/token)',
      ),
    tokenLifetimeSeconds: flag(int(1).default(3600).describe('token lifetime in seconds (expires_in)'), { flag: 'token-lifetime' }),
    defaultLimit: int(1).default(100).describe('page size when no limit is sent'),
    maxLimit: int(1).default(1000).describe('largest page size; larger limits are clamped'),
    micrositeId: z.string().min(1).default('ms-demo').describe('study-website id of the site list'),
    allowedOrigins: flag(
      z.array(z.string().min(1)).default(['https://study.example.org']).describe('origins allowed to read the site list'),
      {
        flag: 'allowed-origin',
        commaSeparated: true,
        help: 'origin allowed to read the site list (repeatable or comma-separated)',
      },
    ),
    drift: z
      .boolean()
      .default(true)
      .describe(
        'schema drift: name-keyed envelopes, unknown keys and types (--no-drift to turn off); off keeps both contact-attempt spellings, v2 creation and unknown enum values',
      ),
    releaseFraction: z.number().min(0).max(1).default(1).describe('share (0..1) of the stream visible at start; grow() releases the rest'),
    growEvery: z
      .object({
        intervalMs: flag(int(1).describe('release more events every N ms'), { flag: 'grow-every-ms' }),
        events: flag(int(1).default(10).describe('events released per --grow-every-ms tick'), { flag: 'grow-events' }),
      })
      .optional()
      .describe("release `events` more events every `intervalMs` ms while running (the timer is unref'd)"),
    syntheticEvents: int(0, 50_000_000)
      .optional()
      .describe('serve N synthetic events of the four default types instead of the story data set (benchmarks)'),
    syntheticLateTail: int(0, 50_000_000)
      .optional()
      .describe(
        'in the last N synthetic events, one status change in five is a late status of an old patient, dated weeks back (benchmarks: a night)',
      ),
    faults: flag(
      z
        .array(z.custom<FaultRule>((v) => typeof v === 'object' && v !== null))
        .optional()
        .describe('fault rules active from the start'),
      {
        flag: 'fault',
        parseItem: parseFaultSpec,
        help: 'inject a fault, repeatable: <endpoint>:<kind>[=<value>][:<key>=<value>]..., e.g. events:status=503:times=3 (kinds below)',
      },
    ),
    now: flag(
      z
        .custom<() => number>((v) => typeof v === 'function')
        .optional()
        .describe('clock in epoch ms (token expiry); default Date.now'),
      { cli: false },
    ),
    logger: flag(
      z
        .custom<Logger>((v) => typeof v === 'object' && v !== null)
        .optional()
        .describe('logger (debug line per request, never tokens or payloads); default silent'),
      {
        cli: false,
      },
    ),
  })
  .refine((o) => o.defaultLimit <= o.maxLimit, { message: 'defaultLimit must not exceed maxLimit', path: ['defaultLimit'] });

/** Options of `startMockApi` as given: every field optional, defaults in {@link MockApiOptionsSchema}. */
export type MockApiOptions = z.input<typeof MockApiOptionsSchema>;

/** The options as resolved (defaults filled). `port` is the bound port; `tokenLifetimeSeconds` follows runtime changes. */
export type ResolvedMockApiOptions = Omit<z.output<typeof MockApiOptionsSchema>, 'faults' | 'now' | 'logger'>;
