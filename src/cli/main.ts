/**
 * The CLI entry: builds yargs with every command, installs the signal handlers, runs the
 * command and returns the exit code (docs/contracts.md "Commands"). `src/cli.ts` calls
 * {@link run} and exits with its result.
 *
 * @module
 */
import type { Writable } from 'node:stream';
import yargs from 'yargs';
import { ConfigError, InterruptedError } from '../errors.js';
import { describeFailure } from './exit.js';
import { SecretRegistry } from '../log/secrets.js';
import type { CliContext } from './context.js';
import { allOptions } from './options.js';
import { stageCommands } from './commands/stages.js';
import { statusCommand } from './commands/status.js';
import { mockApiCommand } from './commands/mockApi.js';
import { readFileSync } from 'node:fs';

/** Longest wait after SIGINT / SIGTERM before the process exits regardless, in ms. */
const GRACE_MS = 5_000;

/** Streams and process hooks of one invocation (tests pass their own). */
export interface RunIo {
  stdout?: Writable;
  stderr?: Writable;
  /** Install SIGINT / SIGTERM handlers (default true). */
  handleSignals?: boolean;
}

function loadConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read --config ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  try {
    const value: unknown = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch {
    throw new ConfigError(`--config ${path} is not a JSON object of options`);
  }
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
    const parser = allOptions(
      yargs([...argv])
        .scriptName('recruit-etl')
        .usage('$0 <command> [options]\n\nBatch ETL from the recruitment reporting API into DuckDB and Parquet.')
        .env('RECRUIT_ETL')
        .config('config', 'JSON file whose keys are option names (kebab-case)', loadConfigFile),
    )
      .command(stageCommands(ctx))
      .command(statusCommand(ctx))
      .command(mockApiCommand(ctx))
      .demandCommand(1, 'name a command')
      .strictCommands()
      .strictOptions()
      .help()
      .version()
      .wrap(Math.min(110, process.stdout.columns ?? 100))
      .exitProcess(false)
      .fail((msg, err) => {
        throw err ?? new ConfigError(msg, { hint: 'see `recruit-etl --help`' });
      });
    await parser.parseAsync();
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
  if (failure !== undefined) {
    const reason: unknown = controller.signal.reason;
    const err = controller.signal.aborted && reason instanceof InterruptedError && !(failure instanceof InterruptedError) && (failure as Error)?.name === 'AbortError' ? reason : failure;
    const { exitCode, text } = describeFailure(err, ctx.verbose, ctx.secrets);
    ctx.logger?.error({ code: (err as { code?: string }).code, exitCode }, 'run failed');
    ctx.stderr.write(`${text}\n`);
    return exitCode;
  }
  return ctx.exitCode;
}
