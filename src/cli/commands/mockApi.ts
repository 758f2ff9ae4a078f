/**
 * `recruit-etl mock-api`: hands the rest of the command line and the environment to the
 * simulator's own CLI, the workspace package `@recruit-etl/mock-api` (packages/mock-api),
 * loaded on demand. The package is a development dependency: an install without it (the
 * production image) refuses the command with exit 2. Its options, variables and `--config`
 * keys are the package's (`recruit-etl mock-api --help`); nothing of it is imported here.
 *
 * @module
 */
import type { Writable } from 'node:stream';
import type { CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { createLogger, type Logger } from '../../log/logger.js';
import { unknownVariables, type Config } from '../../config/config.js';
import { warnUnknownVariables, type CliContext } from '../context.js';
import { KNOWN_VARIABLES } from '../options.js';

/** The simulator's package (packages/mock-api): a devDependency, absent from the production image. */
export const MOCK_API_PACKAGE: string = '@recruit-etl/mock-api';

/** The command's name. */
export const MOCK_API_COMMAND = 'mock-api';

/** What the job uses of the package: its command line and its flags (packages/mock-api/src/main.ts). */
interface MockApiPackage {
  runMockApiCli(
    argv: readonly string[],
    io: { stdout: Writable; env: NodeJS.ProcessEnv; signal: AbortSignal; logger: (level: string) => Logger; scriptName: string },
  ): Promise<void>;
  /** The simulator's flags: each is also a variable, `envNameOf(flag)`. */
  MOCK_API_FLAGS: ReadonlyArray<{ flag: string }>;
  envNameOf(flag: string): string;
}

const firstLine = (text: string): string => text.split('\n', 1)[0]!.slice(0, 300);

/**
 * Loads the simulator's package.
 *
 * @throws {ConfigError} the package is not installed (the production image), or installed but
 *   not built (exit 2)
 */
async function loadMockApi(): Promise<MockApiPackage> {
  try {
    return (await import(MOCK_API_PACKAGE)) as MockApiPackage;
  } catch (err) {
    // Only the package itself missing; a file missing inside it (not built) is another error.
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ERR_MODULE_NOT_FOUND' || !e.message.startsWith(`Cannot find package '${MOCK_API_PACKAGE}'`)) {
      throw new ConfigError(`mock-api: the simulator (${MOCK_API_PACKAGE}) cannot be loaded: ${firstLine(e.message)}`, {
        cause: err,
        hint: 'build it: npm run build (or make build)',
      });
    }
    throw new ConfigError(`mock-api: the simulator (${MOCK_API_PACKAGE}) is a development package, not in this install`, {
      hint: 'run it from a clone of the repository after npm ci, as make demo does',
    });
  }
}

/**
 * Runs the simulator's CLI on `args` (the arguments after `mock-api`, without the job's
 * `--verbose`) until `ctx.signal` aborts. Its usage errors become the job's {@link ConfigError}
 * (exit 2, the same one line).
 *
 * @throws {ConfigError} the package is missing, or a bad option, variable, `--config` file or busy port
 */
export async function runMockApi(ctx: CliContext, args: readonly string[]): Promise<void> {
  const { runMockApiCli, MOCK_API_FLAGS, envNameOf } = await loadMockApi();
  const known = new Set([...KNOWN_VARIABLES, ...MOCK_API_FLAGS.map((f) => envNameOf(f.flag))]);
  const logger = (level: string): Logger => {
    const l = createLogger({ level: level as Config['logLevel'] });
    warnUnknownVariables(l, unknownVariables(ctx.env, known));
    return l;
  };
  try {
    await runMockApiCli(
      args.filter((a) => a !== '--verbose'),
      { stdout: ctx.stdout, env: ctx.env, signal: ctx.signal, logger, scriptName: `recruit-etl ${MOCK_API_COMMAND}` },
    );
  } catch (err) {
    const e = err as { code?: unknown; message: string; hint?: string };
    if (e.code !== 'E_CONFIG') throw err;
    throw new ConfigError(e.message, { cause: err, ...(e.hint === undefined ? {} : { hint: e.hint }) });
  }
}

/**
 * The yargs module of `mock-api`, for the command list of `recruit-etl --help`: `run`
 * (src/cli/main.ts) hands `mock-api …` to {@link runMockApi} before yargs parses.
 */
export function mockApiCommand(ctx: CliContext, argv: readonly string[]): CommandModule {
  return {
    command: MOCK_API_COMMAND,
    describe: 'serve the simulator of the upstream API (token, events, site list) on a local port (a development package)',
    builder: (y) => y.strictOptions(false),
    handler: () => runMockApi(ctx, argv.slice(argv.indexOf(MOCK_API_COMMAND) + 1)),
  };
}
