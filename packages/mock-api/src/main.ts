/**
 * The `mock-api` command line: serve the simulator on a local port until the signal aborts,
 * printing one JSON line with the URLs and the settings a client needs. Its options are the
 * flags of {@link MOCK_API_FLAGS} plus `--config` and `--log-level`; each is also the variable
 * `RECRUIT_ETL_<FLAG_IN_UPPER_SNAKE>` and a key of the `--config` JSON file (kebab-case), by
 * precedence flags, then environment, then the file, then the defaults (README.md "The
 * simulator"). The job's `recruit-etl mock-api` hands its command line here.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import yargs, { type Argv, type Options } from 'yargs';
import { ConfigError } from './errors.js';
import { cliLogger } from './logger.js';
import { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, mockApiOptionsFromFlags, type MockApiFlag, type MockApiFlagValues } from './mockApiFlags.js';
import type { MockApiOptions } from './options.js';
import { startMockApi, type MockApi } from './start.js';

/** The command's own port default (the demo's); `startMockApi`'s is 0. */
export const CLI_DEFAULT_PORT = 8787;
/** pino's level names, the values of `--log-level`. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** Largest `--config` file read, in bytes: an options file is a few hundred. */
const CONFIG_MAX_BYTES = 1 << 20;

/** Streams and hooks of one invocation (tests and the job pass their own). */
export interface MockApiCliIo {
  /** Where the "listening" line goes (default `process.stdout`). */
  stdout?: Writable;
  /** The environment the `RECRUIT_ETL_*` values are read from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Aborted to stop the server (SIGINT / SIGTERM); without one the server runs until the process ends. */
  signal?: AbortSignal;
  /** Builds the logger at the chosen level (default: JSON lines on stdout). */
  logger?: (level: string) => Logger;
  /** The name in usage lines (default `mock-api`; the job's is `recruit-etl mock-api`). */
  scriptName?: string;
}

/** The variable of a flag: `--sites-per-trial` → `RECRUIT_ETL_SITES_PER_TRIAL`. */
export function envNameOf(flag: string): string {
  return `RECRUIT_ETL_${flag.replace(/^--/, '').replaceAll('-', '_').toUpperCase()}`;
}

/** The label of a flag in errors: `--port (RECRUIT_ETL_PORT)`. */
const label = (flag: string): string => `${flag} (${envNameOf(flag)})`;

/** The yargs declaration of one flag: shown default, never applied (an absent flag stays absent). */
function yargsOption(f: MockApiFlag): Options {
  const def = f.key === 'port' ? CLI_DEFAULT_PORT : f.default;
  const opt: Options = { type: f.type === 'array' ? 'string' : f.type, describe: `${f.description} [env ${envNameOf(f.flag)}]` };
  if (f.type === 'array') opt.array = true;
  if (def !== undefined) opt.defaultDescription = String(def);
  return opt;
}

/** The parser of the command line (yargs): the flags, `--config`, `--log-level`, `--help`; `scriptName` in usage lines. */
export function mockApiParser(argv: readonly string[], scriptName: string): Argv {
  let y = yargs([...argv])
    .scriptName(scriptName)
    .usage('$0 [options]\n\nServe the simulator of the upstream API (token, events, site list) on a local port.')
    .option('config', { type: 'string', describe: 'JSON file of options (kebab-case keys) [env RECRUIT_ETL_CONFIG]' })
    .option('log-level', { type: 'string', describe: `${LOG_LEVELS.join('|')} [env RECRUIT_ETL_LOG_LEVEL]`, defaultDescription: 'info' });
  for (const f of MOCK_API_FLAGS) y = y.option(f.flag.slice(2), yargsOption(f));
  return y
    .group(
      MOCK_API_FLAGS.map((f) => f.flag.slice(2)),
      'Simulator:',
    )
    .epilogue(
      `${MOCK_API_FAULT_HELP}\n\nEvery option is also the environment variable shown as [env …] and a key of the --config\nJSON file (kebab-case). Precedence: flags, then environment, then the config file, then the\ndefaults. A bad option is exit 2.`,
    )
    .strict()
    .help()
    .version(false)
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new ConfigError(msg, { hint: `see \`${scriptName} --help\`` });
    });
}

/**
 * Reads the `--config` file: a JSON object, keys in kebab case or camelCase.
 *
 * @throws {ConfigError} a missing, unreadable, oversized or non-object file (exit 2)
 */
function readConfigFile(path: string): Record<string, unknown> {
  const where = `--config (RECRUIT_ETL_CONFIG): ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${where}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
  }
  if (Buffer.byteLength(text) > CONFIG_MAX_BYTES) throw new ConfigError(`${where}: over ${CONFIG_MAX_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${where}: is not valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${where}: is not a JSON object`);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(parsed)) out[k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = v;
  return out;
}

/**
 * A value from the environment or the file, typed as the flag: numbers and booleans from text.
 *
 * @throws {ConfigError} text that is not of the flag's type, naming the flag and its variable
 */
function coerce(f: MockApiFlag, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (f.type === 'number') {
    const n = value.trim() === '' ? Number.NaN : Number(value);
    if (!Number.isFinite(n)) throw new ConfigError(`${label(f.flag)}: not a number`);
    return n;
  }
  if (f.type === 'boolean') {
    if (['true', '1', 'yes'].includes(value)) return true;
    if (['false', '0', 'no'].includes(value)) return false;
    throw new ConfigError(`${label(f.flag)}: not true or false`);
  }
  return f.type === 'array' ? [value] : value;
}

/**
 * The flag values of one invocation by precedence (flags > `RECRUIT_ETL_*` > `--config` file >
 * the port default 8787), and the log level.
 *
 * @throws {ConfigError} an unreadable `--config` file, a value of the wrong type, an unknown log level
 */
export function mockApiValues(argv: Record<string, unknown>, env: NodeJS.ProcessEnv): { flags: MockApiFlagValues; logLevel: string } {
  const given = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);
  const configPath = (argv['config'] as string | undefined) ?? given(env['RECRUIT_ETL_CONFIG']);
  const file = configPath === undefined ? {} : readConfigFile(configPath);
  const flags: Record<string, unknown> = { port: CLI_DEFAULT_PORT };
  for (const f of MOCK_API_FLAGS) {
    const value = argv[f.key] ?? given(env[envNameOf(f.flag)]) ?? file[f.key];
    if (value !== undefined) flags[f.key] = argv[f.key] === undefined ? coerce(f, value) : value;
  }
  const logLevel = (argv['logLevel'] as string | undefined) ?? given(env['RECRUIT_ETL_LOG_LEVEL']) ?? file['logLevel'] ?? 'info';
  if (typeof logLevel !== 'string' || !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`--log-level (RECRUIT_ETL_LOG_LEVEL): must be one of ${LOG_LEVELS.join('|')}`);
  }
  return { flags: flags as MockApiFlagValues, logLevel };
}

/**
 * Starts the simulator with `options`, turning a port it cannot bind into a usage error.
 *
 * @throws {ConfigError} the port is in use or may not be bound by this user (exit 2)
 */
async function start(options: MockApiOptions): Promise<MockApi> {
  try {
    return await startMockApi(options);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
    const where = `${options.host ?? '127.0.0.1'}:${String(options.port)}`;
    throw new ConfigError(`${label('--port')}: ${where} ${code === 'EADDRINUSE' ? 'is already in use' : 'may not be bound by this user'}`, {
      cause: err,
      hint: 'pick another port, or 0 for any free one',
    });
  }
}

/** Serves until `signal` aborts (forever without one), then closes the server. */
async function serve(options: MockApiOptions, io: MockApiCliIo): Promise<void> {
  const api = await start(options);
  (io.stdout ?? process.stdout).write(
    `${JSON.stringify({
      mockApi: 'listening',
      baseUrl: api.baseUrl,
      authUrl: api.authUrl,
      clientId: api.options.clientId,
      audience: api.options.audience,
      micrositeId: api.options.micrositeId,
      origin: api.options.allowedOrigins[0],
      trialIds: api.truth.trialIds,
      events: api.truth.visibleCount(),
    })}\n`,
  );
  const signal = io.signal;
  if (signal === undefined) return;
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await api.close();
}

/**
 * Runs the `mock-api` command line `argv` (the arguments after the command's name). Resolves
 * after `--help`, or once the server stopped on `io.signal`.
 *
 * @throws {ConfigError} a bad flag, variable, `--config` file or fault spec, or a port it cannot bind (exit 2)
 */
export async function runMockApiCli(argv: readonly string[], io: MockApiCliIo = {}): Promise<void> {
  let options: MockApiOptions | undefined;
  let logLevel = 'info';
  await mockApiParser(argv, io.scriptName ?? 'mock-api')
    .command(
      '$0',
      false,
      () => undefined,
      (args: Record<string, unknown>) => {
        const values = mockApiValues(args, io.env ?? process.env);
        options = mockApiOptionsFromFlags(values.flags);
        logLevel = values.logLevel;
      },
    )
    .parseAsync();
  if (options === undefined) return; // --help
  const logger = (io.logger ?? cliLogger)(logLevel);
  await serve({ ...options, logger }, io);
}
