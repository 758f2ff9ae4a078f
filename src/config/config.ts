/**
 * The configuration of recruit-etl: one zod schema for every option of docs/contracts.md
 * ("Options"). yargs gathers flags, `RECRUIT_ETL_*` environment variables and the
 * optional JSON `--config` file (precedence: flags > env > file > defaults); this module
 * validates the result and says, all at once, which options are missing or invalid.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../errors.js';

/**
 * Default event types (docs/contracts.md "Options"): the three patient types and both contact-attempt
 * spellings, since the spec leaves the name unresolved (spec §6).
 */
export const DEFAULT_EVENT_TYPES: readonly string[] = [
  'v1.patient.created',
  'v1.patient.referralAcknowledged',
  'v1.patient.statusChanged',
  'v1.contactAttempt.created',
  'v1.patient.contactAttempt.created',
];

/** Split repeatable values that may also arrive comma-separated (env vars, config files). */
export function splitList(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return items
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

const url = z
  .string()
  .trim()
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL without user info')
  .transform((v) => v.replace(/\/+$/, ''));

/** Every option, validated. Field names are the camelCase of the kebab-case flags. */
export const ConfigSchema = z.object({
  /** `--db`: the DuckDB file. */
  db: z.string().min(1).default('data/warehouse.duckdb').describe('DuckDB warehouse file'),
  /** `--base-url`: the spec's `{base_url}`. */
  baseUrl: url.optional().describe("API base URL, the spec's {base_url}"),
  /** `--auth-url`: the spec's `{auth_url}`; the token is requested at `{auth_url}/oauth/token`. */
  authUrl: url.optional().describe("token host, the spec's {auth_url}"),
  clientId: z.string().min(1).optional().describe('OAuth 2.0 client id (per environment)'),
  /** Never logged; prefer the env var or `--client-secret-file`. */
  clientSecret: z.string().min(1).optional().describe('OAuth 2.0 client secret'),
  clientSecretFile: z.string().min(1).optional().describe('file holding the client secret'),
  audience: z.string().min(1).optional().describe('OAuth 2.0 audience of the API'),
  trialId: z.array(z.string().min(1)).default([]).describe('trial ids (repeatable or comma-separated)'),
  eventType: z
    .array(z.string().min(1))
    .default([...DEFAULT_EVENT_TYPES])
    .describe('event types (repeatable or comma-separated)'),
  /** `limit` sent on the first request of a new stream; the server's default when absent. */
  pageSize: z.number().int().positive().optional().describe('events per page (limit)'),
  micrositeId: z.string().min(1).optional().describe('study-website (microsite) id'),
  origin: z.string().min(1).optional().describe('Origin header for the site list'),
  exportDir: z.string().min(1).default('data/exports').describe('Parquet export folder'),
  /** The operator's CSV of event site display names, loaded as `seed_site_names` (docs/models.md "Site names"). */
  siteNames: z.string().min(1).optional().describe('CSV of display names of event site ids (seed_site_names)'),
  environment: z.string().min(1).default('production').describe('environment label (staging, production)'),
  /** The most pages per transaction (`docs/ingest.md` "Batches"); the cursor always commits with its events. */
  batchPages: z.number().int().positive().default(1000).describe('pages per commit, at most'),
  /** Empty pages in a row, `hasNextPage` true, after which the stream breaks the contract (`docs/ingest.md` "Bounded time"). */
  maxEmptyPages: z.number().int().positive().default(1000).describe('empty pages in a row before exit 6'),
  /** Longest time a page body may take to arrive whole, in seconds (`docs/ingest.md` "Bounded time"). */
  bodyTimeout: z.number().positive().default(120).describe('longest time for a whole response body (s)'),
  /** DuckDB memory_limit. */
  memoryLimit: z.string().min(1).default('2GB').describe('DuckDB memory_limit'),
  /** Longest Retry-After the job waits for, in seconds; a longer one fails the run with exit 4. */
  maxRetryAfter: z.number().positive().default(120).describe('longest Retry-After honoured (s)'),
  /** Whole-run deadline for the upstream calls, in seconds. */
  deadline: z.number().positive().optional().describe('deadline for upstream calls (s)'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  verbose: z.boolean().default(false),
});

/** The validated configuration. */
export type Config = z.infer<typeof ConfigSchema>;

/** What a command needs beyond the defaults. */
export type Need = 'events' | 'sites';

const REQUIRED: Record<Need, (keyof Config)[]> = {
  events: ['baseUrl', 'authUrl', 'clientId', 'clientSecret', 'audience', 'trialId'],
  sites: ['baseUrl', 'micrositeId', 'origin', 'trialId'],
};

/** kebab-case flag of a config key, e.g. `baseUrl` → `base-url`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Environment variable of a config key, e.g. `baseUrl` → `RECRUIT_ETL_BASE_URL`. */
export function envName(key: string): string {
  return `RECRUIT_ETL_${flagName(key).replaceAll('-', '_').toUpperCase()}`;
}

/**
 * Validate the options gathered by yargs.
 *
 * @param raw the yargs argv (camelCase keys; lists may be arrays or comma-separated strings)
 * @param needs which groups of options the command requires
 * @param readFile injectable for tests; reads `--client-secret-file`
 * @throws {ConfigError} naming every missing option with its env variable, and every invalid one (exit 2)
 */
export function resolveConfig(
  raw: Record<string, unknown>,
  needs: readonly Need[] = [],
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): Config {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = raw[key];
    if (value === undefined || value === '') continue;
    input[key] = value;
  }
  for (const key of ['trialId', 'eventType'] as const) {
    if (input[key] !== undefined) input[key] = splitList(input[key]);
    if (key === 'eventType' && Array.isArray(input[key]) && (input[key] as string[]).length === 0) delete input[key];
  }
  for (const key of ['pageSize', 'batchPages', 'maxRetryAfter', 'deadline'] as const) {
    const v = input[key];
    if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) input[key] = Number(v);
  }
  const parsed = ConfigSchema.safeParse(input);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0] ?? '');
      problems.push(`--${flagName(key)} (${envName(key)}): ${issue.message}`);
    }
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`, {
      hint: 'see `recruit-etl --help` and the README configuration table',
    });
  }
  const config = parsed.data;
  if (config.clientSecretFile !== undefined && config.clientSecret === undefined) {
    try {
      config.clientSecret = readFile(config.clientSecretFile).trim();
    } catch (err) {
      throw new ConfigError(`cannot read --client-secret-file ${config.clientSecretFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, {
        cause: err,
      });
    }
    if (config.clientSecret === '') {
      throw new ConfigError(`--client-secret-file ${config.clientSecretFile} is empty`);
    }
  }
  const missing = [...new Set(needs.flatMap((n) => REQUIRED[n]))].filter((key) => {
    const v = config[key];
    return v === undefined || (Array.isArray(v) && v.length === 0);
  });
  if (missing.length > 0) {
    const list = missing.map((k) =>
      k === 'clientSecret'
        ? `--client-secret (${envName(k)}) or --client-secret-file (${envName('clientSecretFile')})`
        : `--${flagName(k)} (${envName(k)})`,
    );
    throw new ConfigError(`missing required option(s): ${list.join(', ')}`, {
      hint: 'set them as flags, environment variables or keys of the --config JSON file',
    });
  }
  return config;
}
