/**
 * The configuration of recruit-etl, declared once: {@link ConfigSchema} holds every option
 * of docs/contracts.md ("Options") with its validation, default and description, and its
 * {@link optionMeta} entry says which commands take it. From that one declaration come the
 * yargs flags of each command (src/cli/options.ts), the `RECRUIT_ETL_*` environment
 * variables, the keys of the `--config` JSON file, `--help` and the options table check of
 * docs/contracts.md (test/unit/config/options.test.ts).
 *
 * Sources, highest first: flags > environment > `--config` file > defaults
 * ({@link gatherOptions}); {@link resolveConfig} validates the result and says, all at once,
 * which options are missing or invalid, each with its flag and variable (exit 2).
 *
 * @module
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { checkInputFile, formatBytes, INPUT_FILE_MAX_BYTES, readInputFile } from '../fs/inputFile.js';
import { BATCH_MAX_BYTES, DEFAULT_BATCH_PAGES, WIDE_BATCH_BYTES } from '../extract/batches.js';
import { DEFAULT_PROGRESS_INTERVAL_SECONDS } from '../log/progress.js';
import { DEFAULT_EVENT_TYPES as SHARED_DEFAULT_EVENT_TYPES } from '@recruit-etl/event-types';
import { TOKEN_AUDIENCE_PARAMETERS, TOKEN_CLIENT_AUTHS, TOKEN_REQUEST_FORMATS } from '../upstream/auth.js';
import { DEFAULT_MAX_EMPTY_PAGES } from '../upstream/events.js';
import { DEFAULT_HTTP_POLICY } from '../upstream/http.js';

/**
 * Default event types (docs/contracts.md "Options"): the three patient types and both
 * contact-attempt spellings, since the API leaves the name unresolved (docs/domain.md).
 * Declared once in `@recruit-etl/event-types` (packages/event-types), which the simulator reads too.
 */
export const DEFAULT_EVENT_TYPES: readonly string[] = SHARED_DEFAULT_EVENT_TYPES;

/** The commands of the CLI (docs/contracts.md "Commands"). */
export const COMMAND_NAMES = [
  'run',
  'extract',
  'sites',
  'transform',
  'export',
  'report',
  'publish',
  'status',
  'streams',
  'mock-api',
] as const;
/** One command of the CLI. */
export type CommandName = (typeof COMMAND_NAMES)[number];

/** Commands that run pipeline stages and record themselves in `etl.runs`. */
export const PIPELINE: readonly CommandName[] = ['run', 'extract', 'sites', 'transform', 'export', 'report', 'publish'];
const WAREHOUSE: readonly CommandName[] = [...PIPELINE, 'status', 'streams'];
const EVENTS: readonly CommandName[] = ['run', 'extract'];
const UPSTREAM: readonly CommandName[] = ['run', 'extract', 'sites'];
const SITES: readonly CommandName[] = ['run', 'sites'];
const EXPORTS: readonly CommandName[] = ['run', 'export', 'report'];
const REPORTS: readonly CommandName[] = ['run', 'report'];
const TRANSFORMS: readonly CommandName[] = ['run', 'transform'];
const LAKE: readonly CommandName[] = ['run', 'publish'];
const ALL: readonly CommandName[] = COMMAND_NAMES;

/** Headings of `--help`, in the order shown. */
export const OPTION_GROUPS = [
  'Warehouse and logs:',
  'Upstream (extract):',
  'Site list (sites):',
  'Models (transform):',
  'Exports:',
  'Lake (publish):',
] as const;
const [GENERAL, UPSTREAM_GROUP, SITES_GROUP, MODELS_GROUP, EXPORTS_GROUP, LAKE_GROUP] = OPTION_GROUPS;

/** What the schema itself cannot say about an option (registered on its field, see {@link option}). */
export interface OptionMeta {
  /** The commands that show and accept the option; any other command refuses the flag. */
  commands: readonly CommandName[];
  /** Heading under which `--help` lists it. */
  group: (typeof OPTION_GROUPS)[number];
  /** Not in `--help` (tests only). */
  hidden?: boolean;
  /** The default as `--help` shows it, when the schema has none (a default applied elsewhere). */
  defaultHelp?: string;
}

/** Registry of {@link OptionMeta}, keyed by the field schemas of {@link ConfigSchema}. */
export const optionMeta = z.registry<OptionMeta>();

/** Registers `meta` on `schema`; call it on the whole field (`.describe()` makes a new instance). */
function option<T extends z.ZodType>(schema: T, meta: OptionMeta): T {
  optionMeta.add(schema, meta);
  return schema;
}

/**
 * The most UTF-8 bytes a string option may hold, by kind (docs/contracts.md "Options", "Sizes"):
 * a longer value is exit 2 naming the option, before anything is opened or written.
 */
export const OPTION_MAX_BYTES = {
  /** Ids: `--client-id`, each `--trial-id` and `--event-type`, `--microsite-id`, `--failpoint`. */
  id: 256,
  /** Labels: `--environment`, `--memory-limit`, `--lake-schema`. */
  label: 64,
  /** URLs and URL-like values: `--base-url`, `--auth-url`, `--audience`, `--origin`, `--lake`, `--lake-data-path`. */
  url: 8 * 1024,
  /** Paths: `--config`, `--db`, `--metrics-file`, `--client-secret-file`, `--site-names`, `--export-dir`. */
  path: 4 * 1024,
  /** `--client-secret`: as much as its file may hold. */
  secret: INPUT_FILE_MAX_BYTES.secret,
} as const;

/** A string of at most `max` UTF-8 bytes; checked first, and a longer one gets no other check. */
function sized(max: number): z.ZodString {
  return z
    .string()
    .refine((v) => Buffer.byteLength(v, 'utf8') <= max, { message: `must be at most ${formatBytes(max)} (UTF-8)`, abort: true });
}

const url = sized(OPTION_MAX_BYTES.url)
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

/**
 * A DuckDB size for `memory_limit` (docs/contracts.md "Options"): a number and a unit, e.g.
 * `2GB`, `512MB`, `1.5GiB`, `4 GB`; checked here so that a typo is exit 2 naming the option,
 * not a warehouse failure.
 */
/** Whether a configured id is well-formed Unicode (no lone surrogate): it is sent as a URL path segment. */
const isWellFormedText = (s: string): boolean => s.isWellFormed();
const WELL_FORMED = 'must be valid Unicode text (no lone surrogate)';

const DUCKDB_SIZE = /^\s*\d+(\.\d+)?\s*(b|bytes?|kb|kib|kilobytes?|mb|mib|megabytes?|gb|gib|gigabytes?|tb|tib|terabytes?)\s*$/i;
const duckdbSize = sized(OPTION_MAX_BYTES.label).regex(DUCKDB_SIZE, 'must be a DuckDB size such as 2GB, 512MB or 1.5GiB');

const int = z.number().int().positive();

/**
 * `--file-mode`: the owner reads and writes; group and others may read, never write or
 * execute (docs/contracts.md "Files and permissions"). Parsed to the number (0o640).
 */
const fileMode = z
  .string()
  .trim()
  .regex(/^0?6[04][04]$/, 'must be 0600, 0640, 0644 or 0604: the owner reads and writes, group and others read at most')
  .default('0600')
  .transform((v) => Number.parseInt(v, 8));

/** `--metrics-file-mode`: as `--file-mode`, default 0644 (the metrics file holds no patient data; docs/contracts.md "Metrics"). */
const metricsFileMode = z
  .string()
  .trim()
  .regex(/^0?6[04][04]$/, 'must be 0600, 0640, 0644 or 0604: the owner reads and writes, group and others read at most')
  .default('0644')
  .transform((v) => Number.parseInt(v, 8));

/**
 * Every option, validated. Field names are the camelCase of the kebab-case flags; each field
 * is also `RECRUIT_ETL_<FLAG_IN_UPPER_SNAKE>` and a key of the `--config` file.
 *
 * **Adding an option** is one entry here: the zod schema (type, validation, `.default()`,
 * `.describe()` = the `--help` line) wrapped in `option(…, { commands, group })`. The flag,
 * the variable, the help and the config-file key follow; add its row to docs/contracts.md
 * "Options" (a test checks every option is there) and read it as `config.<name>`.
 */
export const ConfigSchema = z.object({
  config: option(sized(OPTION_MAX_BYTES.path).min(1).optional().describe('JSON file of options: keys are option names (kebab-case)'), {
    commands: ALL,
    group: GENERAL,
  }),
  db: option(sized(OPTION_MAX_BYTES.path).min(1).default('data/warehouse.duckdb').describe('DuckDB warehouse file'), {
    commands: WAREHOUSE,
    group: GENERAL,
  }),
  environment: option(
    sized(OPTION_MAX_BYTES.label)
      .min(1)
      .default('production')
      .describe('environment label recorded on streams and runs (staging, production)'),
    {
      commands: PIPELINE,
      group: GENERAL,
    },
  ),
  /** DuckDB `memory_limit` for transform, export and batches held in memory; the extract runs under its own smaller cap (`docs/ingest.md` "Settings"). */
  memoryLimit: option(
    duckdbSize.default('2GB').describe('DuckDB memory_limit for transform and export (the extract runs under its own smaller cap)'),
    {
      commands: WAREHOUSE,
      group: GENERAL,
    },
  ),
  logLevel: option(
    z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('fatal|error|warn|info|debug|trace|silent'),
    {
      commands: ALL,
      group: GENERAL,
    },
  ),
  verbose: option(z.boolean().default(false).describe('stack traces on failure, debug logs'), { commands: ALL, group: GENERAL }),
  /** Seconds between two progress lines in the log while a stage runs (src/log/progress.ts; docs/contracts.md "Progress and the run summary"). */
  progressInterval: option(
    z
      .number()
      .positive()
      .default(DEFAULT_PROGRESS_INTERVAL_SECONDS)
      .describe('seconds between two progress lines in the log while a stage runs'),
    {
      commands: PIPELINE,
      group: GENERAL,
    },
  ),
  /** Mode of every file written for readers, and the matching folder mode (src/fs/readerFiles.ts). */
  fileMode: option(
    fileMode.describe(
      'mode of the files written for readers (published copy, exports, manifest, report); folders get the matching mode (0640 → 0750); the live database stays 0600',
    ),
    {
      commands: PIPELINE,
      group: GENERAL,
    },
  ),
  /** The Prometheus text file rewritten after every pipeline command (src/metrics/metricsFile.ts). */
  metricsFile: option(
    sized(OPTION_MAX_BYTES.path)
      .min(1)
      .optional()
      .describe(
        "Prometheus text file rewritten after every command, success or failure, except one refused on the warehouse's lock (node_exporter's textfile collector)",
      ),
    {
      commands: PIPELINE,
      group: GENERAL,
      defaultHelp: 'none',
    },
  ),
  /** Mode of the metrics file (src/metrics/metricsFile.ts); node_exporter reads it as another user. */
  metricsFileMode: option(
    metricsFileMode.describe(
      "mode of the metrics file (node_exporter's textfile collector runs as another user); --file-mode does not apply to it",
    ),
    {
      commands: PIPELINE,
      group: GENERAL,
    },
  ),
  /** Read by src/failpoints.ts from the environment (crash tests only); declared so that the variable is known. */
  failpoint: option(sized(OPTION_MAX_BYTES.id).optional().describe('tests only: <name>:<n> SIGKILLs the process (src/failpoints.ts)'), {
    commands: PIPELINE,
    group: GENERAL,
    hidden: true,
  }),
  /** `--base-url`: the API's `{base_url}` (docs/ingest.md). */
  baseUrl: option(url.optional().describe("API base URL, the API's {base_url} (required)"), { commands: UPSTREAM, group: UPSTREAM_GROUP }),
  /** `--auth-url`: the token is requested at `{auth_url}/oauth/token`. */
  authUrl: option(url.optional().describe('token host; POST {auth_url}/oauth/token (required)'), {
    commands: EVENTS,
    group: UPSTREAM_GROUP,
  }),
  clientId: option(sized(OPTION_MAX_BYTES.id).min(1).optional().describe('OAuth 2.0 client id for this environment (required)'), {
    commands: EVENTS,
    group: UPSTREAM_GROUP,
  }),
  /** Never logged; prefer the env var or `--client-secret-file` (docs/security.md). */
  clientSecret: option(
    sized(OPTION_MAX_BYTES.secret).min(1).optional().describe('client secret: prefer RECRUIT_ETL_CLIENT_SECRET or --client-secret-file'),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  clientSecretFile: option(
    sized(OPTION_MAX_BYTES.path)
      .min(1)
      .optional()
      .describe(
        'file holding the client secret (systemd credentials, Kubernetes secrets): a regular file of at most 64 KiB; one setting with --client-secret, the higher source wins',
      ),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  audience: option(sized(OPTION_MAX_BYTES.url).min(1).optional().describe('OAuth 2.0 audience of the API (required)'), {
    commands: EVENTS,
    group: UPSTREAM_GROUP,
  }),
  /** `--token-request-format`: the token request's body encoding (src/upstream/auth.ts; docs/upstream.md "Token requests"). */
  tokenRequestFormat: option(
    z
      .enum(TOKEN_REQUEST_FORMATS)
      .default('json')
      .describe("token request body: json (the upstream's documented form) or form (application/x-www-form-urlencoded, RFC 6749 §4.4)"),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  /** `--token-client-auth`: client authentication at the token endpoint (RFC 6749 §2.3.1). */
  tokenClientAuth: option(
    z
      .enum(TOKEN_CLIENT_AUTHS)
      .default('body')
      .describe('client authentication at the token endpoint: body (client_id and client_secret in the body) or basic (HTTP Basic)'),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  /** `--token-audience-parameter`: the request parameter carrying `--audience`. */
  tokenAudienceParameter: option(
    z
      .enum(TOKEN_AUDIENCE_PARAMETERS)
      .default('audience')
      .describe('token request parameter carrying --audience: audience, or resource (RFC 8707 resource indicator)'),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  trialId: option(
    z
      .array(sized(OPTION_MAX_BYTES.id).min(1).refine(isWellFormedText, WELL_FORMED))
      .default([])
      .describe('trial id, repeatable or comma-separated (required)'),
    {
      commands: UPSTREAM,
      group: UPSTREAM_GROUP,
      defaultHelp: 'none',
    },
  ),
  eventType: option(
    z
      .array(sized(OPTION_MAX_BYTES.id).min(1))
      .default([...DEFAULT_EVENT_TYPES])
      .describe('event type, repeatable or comma-separated'),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  /** `limit` sent on the first request of a new stream; the server's default when absent. */
  pageSize: option(int.optional().describe("events per page (limit) on a new stream's first request"), {
    commands: EVENTS,
    group: UPSTREAM_GROUP,
    defaultHelp: "the server's",
  }),
  /** The most pages per transaction (`docs/ingest.md` "Batches"); the cursor always commits with its events. */
  batchPages: option(
    int
      .default(DEFAULT_BATCH_PAGES)
      .describe(
        `pages per commit, at most (events and cursor commit together); a batch also ends at a ${formatBytes(BATCH_MAX_BYTES)} batch file (${formatBytes(WIDE_BATCH_BYTES)} of wide events)`,
      ),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  /** Empty pages in a row, `hasNextPage` true, after which the stream breaks the contract (`docs/ingest.md` "Bounded time"). */
  maxEmptyPages: option(
    int
      .default(DEFAULT_MAX_EMPTY_PAGES)
      .describe(
        'pages in a row with no new event (empty, or only events already stored), hasNextPage true, before the run stops with exit 6',
      ),
    {
      commands: EVENTS,
      group: UPSTREAM_GROUP,
    },
  ),
  /** Largest response body read, bytes (`docs/ingest.md` "How a page is read"); a larger page is exit 6 naming this option and the stream. */
  maxPageBytes: option(
    int
      .max(500 * 1024 * 1024)
      .default(DEFAULT_HTTP_POLICY.maxResponseBytes)
      .describe(
        'largest response body (an events page) read, bytes; a larger page stops the run with exit 6 (the page size of a stream is fixed by its cursor)',
      ),
    {
      commands: UPSTREAM,
      group: UPSTREAM_GROUP,
    },
  ),
  /** Longest time a page body may take to arrive whole, in seconds (`docs/ingest.md` "Bounded time"). */
  bodyTimeout: option(
    z
      .number()
      .positive()
      .default(DEFAULT_HTTP_POLICY.bodyTotalTimeoutMs / 1000)
      .describe('longest time, seconds, for a response body to arrive whole; then retried'),
    {
      commands: UPSTREAM,
      group: UPSTREAM_GROUP,
    },
  ),
  /** Longest Retry-After the job waits for, in seconds; a longer one fails the run with exit 4. */
  maxRetryAfter: option(
    z
      .number()
      .positive()
      .default(DEFAULT_HTTP_POLICY.maxRetryAfterMs / 1000)
      .describe('longest Retry-After honoured, seconds; longer fails with exit 4'),
    {
      commands: UPSTREAM,
      group: UPSTREAM_GROUP,
    },
  ),
  /** Whole-run deadline for the upstream calls, in seconds. */
  deadline: option(z.number().positive().optional().describe('deadline for all upstream calls of the run, seconds'), {
    commands: UPSTREAM,
    group: UPSTREAM_GROUP,
    defaultHelp: 'none',
  }),
  micrositeId: option(
    sized(OPTION_MAX_BYTES.id)
      .min(1)
      .refine(isWellFormedText, WELL_FORMED)
      .optional()
      .describe('study-website (microsite) id (required for sites)'),
    { commands: SITES, group: SITES_GROUP },
  ),
  origin: option(
    sized(OPTION_MAX_BYTES.url).min(1).optional().describe('Origin header the site list is authorized by (required for sites)'),
    {
      commands: SITES,
      group: SITES_GROUP,
    },
  ),
  json: option(z.boolean().default(false).describe('print JSON (a stable interface: docs/contracts.md "Commands")'), {
    commands: ['status', 'streams'],
    group: GENERAL,
  }),
  /** Confirms `streams retire` of a stream that has received pages (docs/contracts.md "Streams"). */
  yes: option(z.boolean().default(false).describe('streams retire: confirm retiring a stream that has received pages'), {
    commands: ['streams'],
    group: GENERAL,
  }),
  /** The operator's CSV of event site display names, loaded as `seed_site_names` (docs/models.md "Site names"). */
  siteNames: option(
    sized(OPTION_MAX_BYTES.path)
      .min(1)
      .optional()
      .describe('CSV of display names of event site ids (site_id,trial_id,site_name,sponsor_site_id), loaded as seed_site_names'),
    { commands: TRANSFORMS, group: MODELS_GROUP, defaultHelp: 'none' },
  ),
  /** The operator's CSV of enrolment targets, loaded as `seed_trial_targets` (docs/models.md "Trial targets"). */
  trialTargets: option(
    sized(OPTION_MAX_BYTES.path)
      .min(1)
      .optional()
      .describe('CSV of enrolment targets per trial (trial_id,enrolment_target,target_date), loaded as seed_trial_targets'),
    { commands: TRANSFORMS, group: MODELS_GROUP, defaultHelp: 'none' },
  ),
  /** Rebuild every model from all of raw instead of by the delta (docs/incremental.md). */
  fullRefresh: option(
    z.boolean().default(false).describe('rebuild every model from all of raw.events instead of only what the new events touch'),
    {
      commands: TRANSFORMS,
      group: MODELS_GROUP,
    },
  ),
  exportDir: option(
    sized(OPTION_MAX_BYTES.path).min(1).default('data/exports').describe('Parquet export folder; the report is <export-dir>/report.html'),
    { commands: EXPORTS, group: EXPORTS_GROUP },
  ),
  /** Open referrals listed per site in the report's worklist (docs/report.md "Worklist"). */
  reportWorklistRows: option(int.default(10).describe("open referrals listed per site in the report's worklist, oldest first"), {
    commands: REPORTS,
    group: EXPORTS_GROUP,
  }),
  /**
   * DuckLake attach string (docs/lakehouse.md): when set, every successful `run` publishes into
   * the lake. May hold a password: registered as a secret, never logged.
   */
  lake: option(
    sized(OPTION_MAX_BYTES.url)
      .trim()
      .regex(/^ducklake:/, "must be a DuckLake attach string such as 'ducklake:postgres:dbname=lake host=db user=etl'")
      .optional()
      .describe('DuckLake to publish into after every successful run: ducklake:postgres:<libpq connection string>'),
    { commands: LAKE, group: LAKE_GROUP, defaultHelp: 'none (no publish)' },
  ),
  /** The lake's `DATA_PATH`: where its Parquet files go (docs/lakehouse.md "Layout"). */
  lakeDataPath: option(
    sized(OPTION_MAX_BYTES.url)
      .min(1)
      .optional()
      .describe("the lake's DATA_PATH: a folder, or an object-store URL (needed when the lake is created)"),
    {
      commands: LAKE,
      group: LAKE_GROUP,
      defaultHelp: 'the one the lake was created with',
    },
  ),
  /** The pipeline's schema in the lake (docs/lakehouse.md "Several pipelines"). */
  lakeSchema: option(
    sized(OPTION_MAX_BYTES.label)
      .trim()
      .regex(/^[a-z][a-z0-9_]{0,62}$/, 'must be lower-case letters, digits and _, starting with a letter')
      .refine(
        (v) => !['all_pipelines', 'memory', 'system', 'temp'].includes(v),
        'all_pipelines holds the views across pipelines; memory, system and temp are DuckDB catalogs',
      )
      .optional()
      .describe("this pipeline's schema in the lake; all_pipelines holds views across every pipeline"),
    { commands: LAKE, group: LAKE_GROUP, defaultHelp: 'the --environment label' },
  ),
  /** This warehouse takes over its lake schema from the one that published there (docs/lakehouse.md "One schema, one pipeline"). */
  lakePipelineMoved: option(
    z
      .boolean()
      .default(false)
      .describe(
        'this warehouse replaces the one that published into the lake schema (the same pipeline moved or rebuilt): take the schema over; give it once',
      ),
    { commands: LAKE, group: LAKE_GROUP },
  ),
});

/** The validated configuration. */
export type Config = z.infer<typeof ConfigSchema>;

/** One option as the CLI declares it: derived from its {@link ConfigSchema} field. */
export interface OptionSpec {
  /** camelCase key, e.g. `memoryLimit`. */
  key: string;
  /** The flag without dashes, e.g. `memory-limit`. */
  flag: string;
  /** Environment variable, e.g. `RECRUIT_ETL_MEMORY_LIMIT`. */
  env: string;
  type: 'string' | 'number' | 'boolean';
  /** Repeatable; each value may also list items separated by commas. */
  array: boolean;
  /** The `--help` line. */
  describe: string;
  /** The default as `--help` shows it; absent when there is none. */
  defaultHelp?: string;
  commands: readonly CommandName[];
  group: string;
  hidden: boolean;
}

/** What is under `.optional()`, `.default()` and `.transform()`, with the default when there is one. */
function unwrap(schema: z.ZodType): { inner: z.ZodType; default?: unknown } {
  let s = schema;
  let def: unknown;
  for (;;) {
    if (s instanceof z.ZodDefault) {
      def ??= s.def.defaultValue;
      s = s.def.innerType as z.ZodType;
    } else if (s instanceof z.ZodOptional) s = s.def.innerType as z.ZodType;
    else if (s instanceof z.ZodPipe) s = s.def.in as z.ZodType;
    else return def === undefined ? { inner: s } : { inner: s, default: def };
  }
}

function specOf(key: string, field: z.ZodType): OptionSpec {
  const meta = optionMeta.get(field);
  if (meta === undefined) throw new Error(`option ${key}: wrap its schema in option(…, { commands, group })`);
  const { inner, default: def } = unwrap(field);
  const array = inner instanceof z.ZodArray;
  const element = array ? (inner.def.element as z.ZodType) : inner;
  const type = element instanceof z.ZodNumber ? 'number' : element instanceof z.ZodBoolean ? 'boolean' : 'string';
  const spec: OptionSpec = {
    key,
    flag: flagName(key),
    env: envName(key),
    type,
    array,
    describe: field.description ?? '',
    commands: meta.commands,
    group: meta.group,
    hidden: meta.hidden === true,
  };
  const shown = meta.defaultHelp ?? (def === undefined || def === false ? undefined : Array.isArray(def) ? def.join(', ') : String(def));
  if (shown !== undefined) spec.defaultHelp = shown;
  return spec;
}

/** Every option of {@link ConfigSchema}, in its order. */
export const OPTIONS: readonly OptionSpec[] = Object.entries(ConfigSchema.shape).map(([key, field]) => specOf(key, field as z.ZodType));

/** The options `command` shows and accepts. */
export function optionsFor(command: CommandName): OptionSpec[] {
  return OPTIONS.filter((o) => o.commands.includes(command));
}

/** What a command needs beyond the defaults. */
export type Need = 'events' | 'sites' | 'lake';

const REQUIRED: Record<Need, (keyof Config)[]> = {
  events: ['baseUrl', 'authUrl', 'clientId', 'clientSecret', 'audience', 'trialId'],
  sites: ['baseUrl', 'micrositeId', 'origin', 'trialId'],
  lake: ['lake'],
};

/** kebab-case flag of a config key, e.g. `baseUrl` → `base-url`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** camelCase key of a flag, e.g. `base-url` → `baseUrl`. */
export function keyName(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Environment variable of a config key, e.g. `baseUrl` → `RECRUIT_ETL_BASE_URL`. */
export function envName(key: string): string {
  return `RECRUIT_ETL_${flagName(key).replaceAll('-', '_').toUpperCase()}`;
}

/** `--flag (VARIABLE)`, the way every message names an option. */
export function optionLabel(key: string): string {
  return `--${flagName(key)} (${envName(key)})`;
}

/** Split repeatable values that may also arrive comma-separated (env vars, config files). */
export function splitList(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return items
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
}

/** Where a command's option values come from, highest precedence first. */
export interface OptionSources {
  /** Parsed flags (camelCase keys; absent flags undefined). */
  flags: Readonly<Record<string, unknown>>;
  /** The process environment. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The `--config` file's object, keys already camelCase ({@link readConfigFile}). */
  file?: Readonly<Record<string, unknown>>;
}

/**
 * Options that are one setting given two ways (docs/contracts.md "Options"): the highest
 * source that gives either wins, and the other option's values from lower sources are
 * dropped; both at the same source are refused by {@link resolveConfig} (exit 2).
 */
export const ONE_SETTING: readonly (readonly [string, string])[] = [['clientSecret', 'clientSecretFile']];

/**
 * Options that confirm one act (docs/contracts.md "Options"): accepted only as a flag, since a
 * `RECRUIT_ETL_*` variable or a `--config` key would stay set and repeat the act on every
 * command (two warehouses carrying `--lake-pipeline-moved` would take the schema from each
 * other on every publish). {@link gatherOptions} refuses them from any other source (exit 2).
 */
export const COMMAND_LINE_ONLY: readonly string[] = ['lakePipelineMoved', 'yes'];

/**
 * The raw value of each of `specs` by precedence: flag > `RECRUIT_ETL_*` variable > config
 * file; options given nowhere are absent (their schema default applies in {@link resolveConfig}).
 * An empty variable counts as unset. For each pair of {@link ONE_SETTING} only the values of
 * the highest source that gives either are kept.
 *
 * @throws {ConfigError} an option of {@link COMMAND_LINE_ONLY} in the environment or the config file (exit 2)
 */
export function gatherOptions(specs: readonly Pick<OptionSpec, 'key' | 'env'>[], sources: OptionSources): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  /** 0 flag, 1 environment, 2 config file. */
  const level: Record<string, number> = {};
  for (const { key, env } of specs) {
    const fromFlag = sources.flags[key];
    const fromEnv = sources.env?.[env];
    const fromFile = sources.file?.[key];
    if (COMMAND_LINE_ONLY.includes(key)) refuseOutsideCommandLine(key, env, fromEnv, fromFile);
    if (fromFlag !== undefined) [out[key], level[key]] = [fromFlag, 0];
    else if (fromEnv !== undefined && fromEnv !== '') [out[key], level[key]] = [fromEnv, 1];
    else if (fromFile !== undefined && fromFile !== null) [out[key], level[key]] = [fromFile, 2];
  }
  for (const pair of ONE_SETTING) {
    const best = Math.min(...pair.map((k) => level[k] ?? Infinity));
    for (const k of pair) if (level[k] !== undefined && level[k] > best) delete out[k];
  }
  return out;
}

/** @throws {ConfigError} when `key` ({@link COMMAND_LINE_ONLY}) is given by the variable `env` or the config file */
function refuseOutsideCommandLine(key: string, env: string, fromEnv: string | undefined, fromFile: unknown): void {
  const where =
    fromEnv !== undefined && fromEnv !== ''
      ? `the environment (${env})`
      : fromFile !== undefined && fromFile !== null
        ? 'the --config file'
        : undefined;
  if (where === undefined) return;
  throw new ConfigError(`--${flagName(key)} is accepted only on the command line, not from ${where}: give it on the command line, once`, {
    hint: `remove it from ${where}`,
  });
}

/**
 * `RECRUIT_ETL_*` variables of `env` that no option declares, sorted; the CLI reports them in
 * one warning and runs on (a Kubernetes Service named recruit-etl injects `RECRUIT_ETL_PORT`).
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>, known: ReadonlySet<string>): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('RECRUIT_ETL_') && !known.has(name))
    .sort();
}

/**
 * Read the `--config` file: a JSON object whose keys are option names (kebab-case; camelCase
 * is accepted too). Keys are returned camelCase.
 *
 * @param known every option key of any command (a key meant for another command is not an error)
 * @param readFile injectable for tests; by default a regular file of at most
 *   {@link INPUT_FILE_MAX_BYTES}`.config` (1 MiB) read without blocking (src/fs/inputFile.ts)
 * @throws {ConfigError} naming `--config (RECRUIT_ETL_CONFIG)` when the file cannot be read, is
 *   not a regular file, is over 1 MiB, is not a JSON object, or has a key that is no option (exit 2)
 */
export function readConfigFile(
  path: string,
  known: ReadonlySet<string>,
  readFile: (path: string) => string = (p) =>
    readInputFile(p, { option: optionLabel('config'), maxBytes: INPUT_FILE_MAX_BYTES.config }).toString('utf8'),
): Record<string, unknown> {
  const label = optionLabel('config');
  const hint = 'fix the path or the file, or unset the option';
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : code === 'EISDIR'
            ? 'a folder, not a file'
            : (code ?? 'unreadable');
    throw new ConfigError(`${label}: cannot read ${path}: ${why}`, { cause: err, hint });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // Only the position: JSON.parse quotes the text around it, which may be the client secret.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new ConfigError(`${label}: ${path} is not valid JSON${at === undefined ? '' : ` (at character ${at})`}`, { hint });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError(`${label}: ${path} must hold a JSON object of options, e.g. {"db": "data/warehouse.duckdb"}`, { hint });
  }
  const out: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    const key = keyName(name);
    if (known.has(key)) out[key] = v;
    else unknown.push(name);
  }
  if (unknown.length > 0) {
    throw new ConfigError(`${label}: ${path} has unknown option(s): ${unknown.map((n) => JSON.stringify(n).slice(0, 80)).join(', ')}`, {
      hint: 'keys are option names as in `recruit-etl <command> --help`, without the dashes',
    });
  }
  return out;
}

/**
 * Bring env and config-file values to each option's type, in place: numeric strings to
 * numbers, `true`/`false`/`1`/`0`/`yes`/`no` to booleans, lists split at commas. Values that
 * do not convert are left for the schema to refuse with the option's name.
 */
export function coerceOptions(specs: readonly Pick<OptionSpec, 'key' | 'type' | 'array'>[], input: Record<string, unknown>): void {
  for (const spec of specs) {
    const v = input[spec.key];
    if (v === undefined) continue;
    if (spec.array) {
      input[spec.key] = splitList(v);
      if (spec.key === 'eventType' && (input[spec.key] as string[]).length === 0) delete input[spec.key];
    } else if (spec.type === 'number' && typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) {
      input[spec.key] = Number(v);
    } else if (spec.type === 'boolean' && typeof v === 'string') {
      const t = v.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(t)) input[spec.key] = true;
      else if (['false', '0', 'no'].includes(t)) input[spec.key] = false;
    } else if (spec.type === 'string' && typeof v === 'number') {
      input[spec.key] = String(v);
    }
  }
}

/**
 * The client secret held by `path` (`--client-secret-file`), trimmed.
 * @throws {ConfigError} naming the option: unreadable, not a regular file, over 64 KiB, or empty (exit 2)
 */
function readSecretFile(path: string, readFile: (path: string) => string): string {
  const label = optionLabel('clientSecretFile');
  let secret: string;
  try {
    secret = readFile(path).trim();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${label}: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
  }
  if (secret === '') throw new ConfigError(`${label}: ${path} is empty`);
  if (Buffer.byteLength(secret, 'utf8') > OPTION_MAX_BYTES.secret)
    throw new ConfigError(`${label}: ${path} holds more than ${formatBytes(OPTION_MAX_BYTES.secret)}`);
  return secret;
}

/**
 * Validate the options of one command.
 *
 * @param raw camelCase keys from {@link gatherOptions} (or a test); lists may be arrays or
 *   comma-separated strings, numbers may be strings
 * @param needs which groups of options the command requires
 * @param readFile injectable for tests; reads `--client-secret-file`, by default a regular
 *   file of at most {@link INPUT_FILE_MAX_BYTES}`.secret` (64 KiB) read without blocking
 * @throws {ConfigError} naming every missing option with its env variable, and every invalid
 *   one (too long: {@link OPTION_MAX_BYTES}), both options of a {@link ONE_SETTING} pair given
 *   at one level, a secret file or `--site-names` that is no regular file or too large (exit 2)
 */
export function resolveConfig(
  raw: Record<string, unknown>,
  needs: readonly Need[] = [],
  readFile: (path: string) => string = (p) =>
    readInputFile(p, { option: optionLabel('clientSecretFile'), maxBytes: INPUT_FILE_MAX_BYTES.secret }).toString('utf8'),
): Config {
  const input: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = raw[key];
    if (value === undefined || value === '') continue;
    input[key] = value;
  }
  coerceOptions(OPTIONS, input);
  const parsed = ConfigSchema.safeParse(input);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = String(issue.path[0] ?? '');
      problems.push(`${optionLabel(key)}: ${issue.message}`);
    }
  }
  for (const [a, b] of ONE_SETTING) {
    if (input[a] !== undefined && input[b] !== undefined) {
      problems.push(
        `${optionLabel(a)} and ${optionLabel(b)} are one setting, given both at the same level (flags, environment or config file): give one`,
      );
    }
  }
  if (!parsed.success || problems.length > 0) {
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`, {
      hint: 'see `recruit-etl <command> --help` and docs/contracts.md "Options"',
    });
  }
  const config = parsed.data;
  if (config.clientSecretFile !== undefined) config.clientSecret = readSecretFile(config.clientSecretFile, readFile);
  // Read later by the transform (src/transform/seeds.ts), refused now: exit 2 before anything is written.
  if (config.siteNames !== undefined)
    checkInputFile(config.siteNames, { option: optionLabel('siteNames'), maxBytes: INPUT_FILE_MAX_BYTES.csv });
  if (config.trialTargets !== undefined)
    checkInputFile(config.trialTargets, { option: optionLabel('trialTargets'), maxBytes: INPUT_FILE_MAX_BYTES.csv });
  const missing = [...new Set(needs.flatMap((n) => REQUIRED[n]))].filter((key) => {
    const v = config[key];
    return v === undefined || (Array.isArray(v) && v.length === 0);
  });
  if (missing.length > 0) {
    const list = missing.map((k) => (k === 'clientSecret' ? `${optionLabel(k)} or ${optionLabel('clientSecretFile')}` : optionLabel(k)));
    throw new ConfigError(`missing required option(s): ${list.join(', ')}`, {
      hint: 'set them as flags, environment variables or keys of the --config JSON file',
    });
  }
  return config;
}
