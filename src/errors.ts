/**
 * The error classes of recruit-etl. Every failure that the CLI reports is one of these:
 * a stable string `code`, the process exit code of docs/contracts.md ("Exit codes"), a message
 * that names what failed, and an optional `hint` that says what to do.
 *
 * Messages never carry secrets, tokens, payloads or referral subject ids
 * (docs/contracts.md guarantee 6): callers build them from allow-listed facts only.
 *
 * @module
 */

/** Exit codes of the CLI contract (docs/contracts.md "Exit codes"). */
export const ExitCode = {
  ok: 0,
  unexpected: 1,
  usage: 2,
  auth: 3,
  upstreamUnavailable: 4,
  locked: 5,
  contract: 6,
  warehouse: 7,
  sigint: 130,
  sigterm: 143,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * One line per exit code for `--help` (the full table with what to do: docs/contracts.md
 * "Exit codes"; a test checks both list the same codes).
 */
export const EXIT_CODE_HELP: readonly (readonly [code: string, meaning: string])[] = [
  ['0', 'done'],
  ['1', 'unexpected failure: run again with --verbose and report it'],
  ['2', 'bad usage or configuration: fix the option or variable named'],
  ['3', 'authentication refused: check the credentials, origin or microsite id'],
  ['4', 'upstream unavailable: run again later, it resumes from the cursor'],
  ['5', 'another process holds the database, or publishes this lake schema'],
  ['6', 'the upstream broke the contract: a person must look'],
  ['7', 'warehouse failure: disk full or an unwritable file'],
  ['130/143', 'interrupted by SIGINT/SIGTERM: run again, it resumes'],
];

/** Options shared by every {@link EtlError}. */
export interface EtlErrorOptions {
  /** The underlying error, kept for `--verbose`; never printed in the one-line summary. */
  cause?: unknown;
  /** What the operator should do, appended to the one-line error. */
  hint?: string;
}

/** Base class: a failure with a stable `code` and the exit code it maps to. */
export class EtlError extends Error {
  /** Stable machine-readable code, e.g. `E_CONFIG`. */
  readonly code: string = 'E_UNEXPECTED';
  /** Process exit code (docs/contracts.md "Exit codes"). */
  readonly exitCode: ExitCodeValue = ExitCode.unexpected;
  /** What to do about it, if known. */
  readonly hint: string | undefined;

  constructor(message: string, options: EtlErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.hint = options.hint;
  }
}

/** Bad usage or configuration: a missing or invalid option. Exit 2. */
export class ConfigError extends EtlError {
  override readonly code = 'E_CONFIG';
  override readonly exitCode = ExitCode.usage;
}

/** The token endpoint refused the credentials, a 401 persisted after a refresh, or the site list refused the origin. Exit 3. */
export class AuthError extends EtlError {
  override readonly code = 'E_AUTH';
  override readonly exitCode = ExitCode.auth;
}

/**
 * The upstream could not be read: unreachable, 5xx, 429, timeouts or unreadable bodies
 * after retries were spent; trying later may help. Exit 4.
 */
export class UpstreamUnavailableError extends EtlError {
  override readonly code = 'E_UPSTREAM_UNAVAILABLE';
  override readonly exitCode = ExitCode.upstreamUnavailable;
}

/**
 * The upstream broke the interface contract: a page that parses but is invalid, a
 * `nextPage` on another origin or one that does not advance, a redirect. A person must look. Exit 6.
 */
export class UpstreamContractError extends EtlError {
  override readonly code = 'E_UPSTREAM_CONTRACT';
  override readonly exitCode = ExitCode.contract;
}

/** Another process holds the DuckDB file. Exit 5. */
export class LockError extends EtlError {
  override readonly code = 'E_LOCKED';
  override readonly exitCode = ExitCode.locked;
}

/** The warehouse failed: disk full, fatal DuckDB error, unreadable file. Exit 7. */
export class WarehouseError extends EtlError {
  override readonly code = 'E_WAREHOUSE';
  override readonly exitCode = ExitCode.warehouse;
}

/** A SQL model failed to build (a bug in a model or a seed). Exit 1. */
export class TransformError extends EtlError {
  override readonly code = 'E_TRANSFORM';
}

/** Writing the Parquet exports failed (disk, permissions). Exit 7. */
export class ExportError extends EtlError {
  override readonly code = 'E_EXPORT';
  override readonly exitCode = ExitCode.warehouse;
}

/** Reading the marts for the report or writing `report.html` failed (no models yet, disk, permissions). Exit 7. */
export class ReportError extends EtlError {
  override readonly code = 'E_REPORT';
  override readonly exitCode = ExitCode.warehouse;
}

/** The run was interrupted by SIGINT (exit 130) or SIGTERM (exit 143). */
export class InterruptedError extends EtlError {
  override readonly code = 'E_INTERRUPTED';
  override readonly exitCode: ExitCodeValue;
  /** The signal that stopped the run. */
  readonly signal: 'SIGINT' | 'SIGTERM';

  constructor(signal: 'SIGINT' | 'SIGTERM', options: EtlErrorOptions = {}) {
    super(`interrupted by ${signal}`, options);
    this.signal = signal;
    this.exitCode = signal === 'SIGINT' ? ExitCode.sigint : ExitCode.sigterm;
  }
}

/** True when `err` is an {@link EtlError} (works across module copies by duck typing). */
export function isEtlError(err: unknown): err is EtlError {
  return err instanceof EtlError;
}
