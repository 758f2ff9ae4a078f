/**
 * What the CLI hands to each command: output streams, the logger factory, the
 * interruption signal, and the slot where a command leaves its exit code.
 *
 * @module
 */
import type { Writable } from 'node:stream';
import { resolveConfig, type Config, type Need } from '../config/config.js';
import { createLogger, type Logger } from '../log/logger.js';

/** Shared state of one CLI invocation. */
export interface CliContext {
  stdout: Writable;
  stderr: Writable;
  signal: AbortSignal;
  /** Set by a command that succeeded with a non-zero code (none today) . */
  exitCode: number;
  /** The logger, created once the options are known. */
  logger?: Logger;
  /** Whether --verbose was given (stack traces on failure). */
  verbose: boolean;
}

/** Validate argv for a command and create its logger. */
export function prepare(ctx: CliContext, argv: Record<string, unknown>, needs: readonly Need[]): { config: Config; logger: Logger } {
  ctx.verbose = argv['verbose'] === true;
  const config = resolveConfig(argv, needs);
  const level = config.verbose && config.logLevel === 'info' ? 'debug' : config.logLevel;
  const logger = createLogger({ level });
  ctx.logger = logger;
  return { config, logger };
}
