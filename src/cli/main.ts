/**
 * The CLI entry: builds yargs with every command, installs the signal handlers, runs the
 * command and returns the exit code (docs/contracts.md "Commands"). `src/cli.ts` calls
 * {@link run} and exits with its result.
 *
 * @module
 */
import type { Writable } from 'node:stream';
import yargs, { type Argv } from 'yargs';
import { ConfigError, InterruptedError } from '../errors.js';
import { describeFailure } from './exit.js';
import { SecretRegistry } from '../log/secrets.js';
import type { CliContext } from './context.js';
import { HELP_EPILOGUE } from './options.js';
import { keyName } from '../config/config.js';
import { writeFinalMetrics } from './metrics.js';
import { stageCommands } from './commands/stages.js';
import { statusCommand } from './commands/status.js';
import { streamsCommand } from './commands/streams.js';
import { MOCK_API_COMMAND, mockApiCommand, runMockApi } from './commands/mockApi.js';

/** Longest wait after SIGINT / SIGTERM before the process exits regardless, in ms. */
const GRACE_MS = 5_000;

/** Streams and process hooks of one invocation (tests pass their own). */
export interface RunIo {
  stdout?: Writable;
  stderr?: Writable;
  /** Install SIGINT / SIGTERM handlers (default true). */
  handleSignals?: boolean;
  /** The environment options are read from (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** yargs' usage message without the camelCase twin of each unknown flag (`batch-pages, batchPages`). */
function usageMessage(msg: string): string {
  const m = /^(Unknown arguments?): (.*)$/.exec(msg);
  if (!m) return msg;
  const names = m[2]!.split(', ');
  const kept = names.filter((n) => !names.some((o) => o !== n && o.includes('-') && keyName(o) === n));
  return `${kept.length === 1 ? 'Unknown argument' : 'Unknown arguments'}: ${kept.map((n) => (n.length === 1 ? n : `--${n}`)).join(', ')}`;
}

/**
 * The job's parser: yargs parses the flags of each command only (src/cli/options.ts); the
 * environment and the --config file are merged by the command (src/cli/context.ts).
 */
function jobParser(ctx: CliContext, argv: readonly string[]): Argv {
  return yargs([...argv])
    .scriptName('recruit-etl')
    .usage(
      '$0 <command> [options]\n\nBatch ETL from the recruitment reporting API into DuckDB and Parquet.\nEach command lists its options: recruit-etl <command> --help',
    )
    .epilogue(HELP_EPILOGUE)
    .command(stageCommands(ctx))
    .command(statusCommand(ctx))
    .command(streamsCommand(ctx))
    .command(mockApiCommand(ctx, argv))
    .demandCommand(1, 'name a command')
    .strictCommands()
    .strictOptions()
    .help()
    .version()
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new ConfigError(usageMessage(msg), { hint: 'see `recruit-etl <command> --help` for the options of each command' });
    });
}

/**
 * Run the CLI.
 *
 * @param argv the arguments after the script name
 * @returns the exit code (0 done; see docs/contracts.md "Exit codes")
 */
export async function run(argv: readonly string[], io: RunIo = {}): Promise<number> {
  const controller = new AbortController();
  const ctx: CliContext = {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    env: io.env ?? process.env,
    signal: controller.signal,
    exitCode: 0,
    verbose: argv.includes('--verbose'),
    secrets: new SecretRegistry(),
  };
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    if (controller.signal.aborted) {
      // A second signal: stop now; DuckDB discards the uncommitted transaction.
      process.exit(new InterruptedError(signal).exitCode);
    }
    const interrupted = new InterruptedError(signal);
    controller.abort(interrupted);
    // The current commit finishes or rolls back within moments; never hang the scheduler.
    setTimeout(() => process.exit(interrupted.exitCode), GRACE_MS).unref();
  };
  const sigint = () => onSignal('SIGINT');
  const sigterm = () => onSignal('SIGTERM');
  if (io.handleSignals !== false) {
    process.on('SIGINT', sigint);
    process.on('SIGTERM', sigterm);
  }
  let failure: unknown;
  try {
    // The simulator parses its own command line (packages/mock-api).
    if (argv[0] === MOCK_API_COMMAND) await runMockApi(ctx, argv.slice(1));
    else await jobParser(ctx, argv).parseAsync();
  } catch (err) {
    failure = err;
  } finally {
    if (io.handleSignals !== false) {
      process.off('SIGINT', sigint);
      process.off('SIGTERM', sigterm);
    }
  }
  if (failure === undefined && controller.signal.aborted && controller.signal.reason instanceof InterruptedError) {
    // mock-api ends normally on a signal.
    return 0;
  }
  let exitCode = ctx.exitCode;
  if (failure !== undefined) {
    const reason: unknown = controller.signal.reason;
    // After a signal, whatever failed failed because of it: say so (exit 130 / 143).
    const err =
      controller.signal.aborted && reason instanceof InterruptedError && !(failure instanceof InterruptedError) ? reason : failure;
    const described = describeFailure(err, ctx.verbose, ctx.secrets);
    exitCode = described.exitCode;
    ctx.logger?.error({ code: (err as { code?: string }).code, exitCode }, 'run failed');
    ctx.stderr.write(`${described.text}\n`);
  }
  return writeFinalMetrics(ctx, exitCode);
}
