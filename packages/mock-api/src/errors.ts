/**
 * The simulator's one error class: a bad option, flag or fault spec. The `mock-api` CLI
 * prints it as one line and exits 2, the job's usage exit code (docs/contracts.md "Exit codes").
 *
 * @module
 */

/** Exit code of a {@link ConfigError}: bad usage, as the job's exit 2. */
export const EXIT_USAGE = 2;

/** A bad option, flag or fault spec of the simulator. Exit 2. */
export class ConfigError extends Error {
  /** Stable machine-readable code, as the job's. */
  readonly code = 'E_CONFIG';
  /** Process exit code of the `mock-api` CLI. */
  readonly exitCode = EXIT_USAGE;
  /** What to do about it, if known; printed after the message in parentheses. */
  readonly hint: string | undefined;

  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConfigError';
    this.hint = options.hint;
  }
}
