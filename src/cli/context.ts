/**
 * What the CLI hands to each command: output streams, the logger factory, the
 * interruption signal, and the slot where a command leaves its exit code.
 *
 * @module
 */
import type { Writable } from 'node:stream';
import { resolveConfig, type Config, type Need } from '../config/config.js';
import { createLogger, type Logger } from '../log/logger.js';
import type { SecretRegistry } from '../log/secrets.js';

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
  /**
   * The invocation's secret values (client secret, issued tokens): every log line, the
   * stderr error line and `etl.runs` are scrubbed of them (docs/security.md).
   */
  secrets: SecretRegistry;
}

/**
 * Validate argv for a command and create its logger. The client secret is registered in
 * `ctx.secrets` before anything can fail or log. Log lines go to `ctx.stdout` when it is not
 * the process's own stdout (in-process tests).
 */
export function prepare(ctx: CliContext, argv: Record<string, unknown>, needs: readonly Need[]): { config: Config; logger: Logger; secrets: SecretRegistry } {
  ctx.verbose = argv['verbose'] === true;
  if (typeof argv['clientSecret'] === 'string') ctx.secrets.addSecret(argv['clientSecret']);
  const config = resolveConfig(argv, needs);
  ctx.secrets.addSecret(config.clientSecret);
  const level = config.verbose && config.logLevel === 'info' ? 'debug' : config.logLevel;
  const logger = createLogger({
    level,
    secrets: ctx.secrets,
    ...(ctx.stdout !== process.stdout ? { destination: ctx.stdout } : {}),
  });
  ctx.logger = logger;
  return { config, logger, secrets: ctx.secrets };
}
