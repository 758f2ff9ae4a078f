/**
 * What the CLI hands to each command: output streams, the environment, the logger factory,
 * the interruption signal, and the slot where a command leaves its exit code; and
 * {@link prepare}, which turns flags, `RECRUIT_ETL_*` variables and the `--config` file into a
 * validated {@link Config}.
 *
 * @module
 */
import { lakePasswords, objectStoreSecrets } from '../publish/lake.js';
import type { Writable } from 'node:stream';
import {
  ConfigSchema,
  gatherOptions,
  optionsFor,
  readConfigFile,
  resolveConfig,
  unknownVariables,
  type CommandName,
  type Config,
  type Need,
  type OptionSpec,
} from '../config/config.js';
import { ConfigError } from '../errors.js';
import { pino } from 'pino';
import { createLogger, type Logger } from '../log/logger.js';
import type { SecretRegistry } from '../log/secrets.js';
import { KNOWN_KEYS, KNOWN_VARIABLES } from './options.js';
import { metricsPathProblem } from '../metrics/metricsPath.js';
import type { WarehouseSeries } from '../metrics/warehouseSeries.js';
import type { Series } from '../metrics/metricsFile.js';

/** Shared state of one CLI invocation. */
export interface CliContext {
  stdout: Writable;
  stderr: Writable;
  /** The environment the options are read from (`process.env` unless a test passes its own). */
  env: Readonly<Record<string, string | undefined>>;
  signal: AbortSignal;
  /** Set by a command that succeeded with a non-zero code (none today) . */
  exitCode: number;
  /** The logger, created once the options are known. */
  logger?: Logger;
  /** Whether --verbose was given (stack traces on failure). */
  verbose: boolean;
  /**
   * The invocation's secret values (client secret, issued tokens): every log line, the
   * stderr error line and `etl.runs` are scrubbed of them (docs/security.md).
   */
  secrets: SecretRegistry;
  /**
   * Set once a command's options are gathered with `--metrics-file`: the CLI rewrites that
   * file when the command ends, whatever its exit code (src/metrics/metricsFile.ts).
   */
  metrics?: {
    path: string;
    command: CommandName;
    startedAt: Date;
    /** `--metrics-file-mode` as a number, once validated (default 0644). */
    fileMode?: number;
    /** Events the command committed (told by the job). */
    eventsLoaded: number;
    /** Wall time of each stage that started, seconds (told by the job). */
    stageSeconds?: Record<string, number>;
    /** The warehouse's series, read by the job before it closed the warehouse (src/metrics/warehouseSeries.ts). */
    warehouse?: WarehouseSeries;
    /** The exit code the file was last written with by this invocation (the job writes it before recording its success). */
    writtenExitCode?: number;
    /** The series this invocation's first write started from: a second write starts from them too. */
    base?: Series;
  };
}

/** The raw option values of a command, by precedence, and the variables nobody declares. */
export interface Gathered {
  raw: Record<string, unknown>;
  /** `RECRUIT_ETL_*` variables no command reads (names only: values may be secrets). */
  unknownVariables: string[];
}

/**
 * Merge flags (`argv` from yargs), the environment and the `--config` file for `specs`
 * (docs/contracts.md "Options"). The secret, wherever it came from, is registered in
 * `ctx.secrets` before anything can fail or log.
 *
 * @throws {ConfigError} a `--config` file that cannot be read or holds unknown keys (exit 2)
 */
export function gather(ctx: CliContext, argv: Record<string, unknown>, specs: readonly OptionSpec[]): Gathered {
  const configPath =
    typeof argv['config'] === 'string' && argv['config'] !== '' ? argv['config'] : ctx.env['RECRUIT_ETL_CONFIG'] || undefined;
  const file = configPath === undefined ? undefined : readConfigFile(configPath, KNOWN_KEYS);
  const raw = gatherOptions(specs, { flags: argv, env: ctx.env, ...(file ? { file } : {}) });
  if (typeof raw['clientSecret'] === 'string') ctx.secrets.addSecret(raw['clientSecret']);
  // The lake's attach string may carry a libpq password (docs/lakehouse.md "Attach string").
  if (typeof raw['lake'] === 'string') for (const p of lakePasswords(raw['lake'])) ctx.secrets.addSecret(p);
  // The object store's AWS_* credentials (docs/lakehouse.md "Object storage").
  if (typeof raw['lake'] === 'string') for (const p of objectStoreSecrets(ctx.env)) ctx.secrets.addSecret(p);
  const v = raw['verbose'];
  ctx.verbose = v === true || v === 'true' || v === '1';
  return { raw, unknownVariables: unknownVariables(ctx.env, KNOWN_VARIABLES) };
}

/** The one warning for variables no option declares (never fatal: docs/contracts.md "Options"). */
export function warnUnknownVariables(logger: Logger, names: readonly string[]): void {
  if (names.length === 0) return;
  logger.warn({ variables: names }, `ignoring ${names.length} unknown RECRUIT_ETL_* environment variable(s): ${names.join(', ')}`);
}

/**
 * Validate the options of `command` (`needs` may depend on the gathered values) and create its logger. Log lines go to `ctx.stdout` when
 * it is not the process's own stdout (in-process tests).
 *
 * @throws {ConfigError} every missing or invalid option, named with its variable (exit 2)
 */
export function prepare(
  ctx: CliContext,
  command: CommandName,
  argv: Record<string, unknown>,
  needs: readonly Need[] | ((raw: Record<string, unknown>) => readonly Need[]),
): { config: Config; logger: Logger; secrets: SecretRegistry } {
  const { raw, unknownVariables: unknown } = gather(ctx, argv, optionsFor(command));
  // Before validation: a command refused on its options (exit 2) is recorded in the metrics too.
  // A path over its size is left to the validation below (exit 2, the value never quoted).
  if (
    typeof raw['metricsFile'] === 'string' &&
    raw['metricsFile'] !== '' &&
    ConfigSchema.shape.metricsFile.safeParse(raw['metricsFile']).success
  ) {
    ctx.metrics = { path: raw['metricsFile'], command, startedAt: new Date(), eventsLoaded: 0 };
    const given = raw['metricsFileMode'];
    const mode = ConfigSchema.shape.metricsFileMode.safeParse(typeof given === 'number' ? String(given) : given);
    if (mode.success) ctx.metrics.fileMode = mode.data;
    // A FIFO, a device or a folder in its place is refused before any work (never opened: it could block).
    const problem = metricsPathProblem(raw['metricsFile']);
    if (problem) {
      throw new ConfigError(`--metrics-file (RECRUIT_ETL_METRICS_FILE) ${raw['metricsFile']} is ${problem}`, {
        hint: "name a regular file (or a new one) in node_exporter's textfile directory, ending in .prom",
      });
    }
  }
  let config: Config;
  try {
    config = resolveConfig(raw, typeof needs === 'function' ? needs(raw) : needs);
  } catch (err) {
    if (!(err instanceof ConfigError) || unknown.length === 0) throw err;
    // A misspelt variable is the likeliest reason for a missing or invalid option.
    throw new ConfigError(err.message, { cause: err.cause, hint: `${err.hint ?? ''}; unknown variables ignored: ${unknown.join(', ')}` });
  }
  ctx.secrets.addSecret(config.clientSecret);
  if (ctx.metrics) ctx.metrics.fileMode = config.metricsFileMode;
  const level = config.verbose && config.logLevel === 'info' ? 'debug' : config.logLevel;
  // `status --json` keeps stdout for its document: its log lines (e.g. the unknown-variables
  // warning) go to stderr (docs/contracts.md "status --json").
  const out = command === 'status' && config.json ? ctx.stderr : ctx.stdout;
  const logger = createLogger({
    level,
    secrets: ctx.secrets,
    ...(out !== process.stdout ? { destination: out === process.stderr ? pino.destination({ dest: 2, sync: true }) : out } : {}),
  });
  ctx.logger = logger;
  warnUnknownVariables(logger, unknown);
  return { config, logger, secrets: ctx.secrets };
}
