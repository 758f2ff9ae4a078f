/**
 * The one place that builds loggers. JSON lines to stdout for schedulers (pino), pretty
 * only when stdout is a TTY.
 *
 * Rules (docs/security.md, docs/contracts.md guarantee 6):
 * - log objects built from allow-listed fields (counts, stream ids, run ids, durations,
 *   status codes, URL origins and paths without query strings);
 * - never a payload, a referral subject id, a token, a secret or a raw body;
 * - `redact` below is the safety net for headers and credential-shaped keys, not the plan;
 * - every finished line goes through the run's {@link SecretRegistry}, which removes the
 *   client secret and issued tokens by value wherever they appear (docs/security.md).
 *
 * @module
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { REDACTED, type SecretRegistry } from './secrets.js';

export type { Logger } from 'pino';

/**
 * Keys censored wherever pino finds them (pino `redact` paths). An error's `message` and
 * `stack` are kept, shortened: see {@link censor}.
 */
export const REDACT_PATHS: readonly string[] = [
  'authorization',
  'Authorization',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  '*.headers.authorization',
  'access_token',
  '*.access_token',
  'accessToken',
  '*.accessToken',
  'token',
  '*.token',
  'client_secret',
  '*.client_secret',
  'clientSecret',
  '*.clientSecret',
  'secret',
  '*.secret',
  'body',
  '*.body',
  'message',
  '*.message',
  'err.stack',
  'error.stack',
  'referralSubjectId',
  '*.referralSubjectId',
  'referral_subject_id',
  '*.referral_subject_id',
];

/**
 * Keys under which a log object carries an error: `{ err }` (pino's error serializer) and
 * `{ error }`. Their `message` is the reason a person needs; every other `message` is an
 * event's payload or could be one.
 */
export const ERROR_KEYS: ReadonlySet<string> = new Set(['err', 'error']);

/** Longest error reason logged, in characters (a line, not a dump). */
export const MAX_REASON_LENGTH = 500;

/**
 * An error message as logged: its first line, without DuckDB's quote of the input it failed
 * on (`… Input: <text>`, which may be a payload), at most {@link MAX_REASON_LENGTH} characters.
 * Secrets are removed later, by value, from the whole line.
 */
export function errorReason(message: string): string {
  let reason = message.split('\n', 1)[0]!;
  const input = reason.search(/\bInput: /);
  if (input >= 0) reason = `${reason.slice(0, input).trimEnd()} Input: [redacted]`;
  return reason.length > MAX_REASON_LENGTH ? `${reason.slice(0, MAX_REASON_LENGTH)}…` : reason;
}

/**
 * The redact censor (docs/security.md "Two layers"). The `message` of an error
 * (`{ err: { message } }`, `{ err: new Error() }`, `{ error: { message } }`) is kept as
 * {@link errorReason} (and its `stack` as that reason and the frames), so a warning says
 * what went wrong; any other `message` (an event's
 * payload, whether object or string) and every other redacted key is censored.
 */
export function censor(value: unknown, path: string[]): unknown {
  if (path.length === 2 && ERROR_KEYS.has(path[0]!) && typeof value === 'string') {
    if (path[1] === 'message') return errorReason(value);
    // A stack starts with the message: the same reason, then the frames.
    if (path[1] === 'stack') return [errorReason(value), ...value.split('\n').filter((l) => /^\s+at /.test(l))].join('\n');
  }
  return REDACTED;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level; default `info`. */
  level?: string;
  /** Where lines go; default stdout (pretty when stdout is a TTY). */
  destination?: DestinationStream;
  /** Force pretty output (default: `process.stdout.isTTY`). Ignored when `destination` is given. */
  pretty?: boolean;
  /**
   * The run's secrets: every line is scrubbed of them just before it is written (also in
   * pretty mode). Cheap: a no-op while nothing is registered.
   */
  secrets?: SecretRegistry;
}

/**
 * Build the root logger.
 *
 * @returns a pino logger with redaction; children per stage via `logger.child({ stage })`.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const base = {
    level: options.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor },
    base: { app: 'recruit-etl' },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(options.secrets ? { hooks: { streamWrite: scrubber(options.secrets) } } : {}),
  };
  if (options.destination) return pino(base, options.destination);
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  if (pretty) {
    return pino({
      ...base,
      transport: { target: 'pino-pretty', options: { colorize: true, destination: 1 } },
    });
  }
  return pino(base, pino.destination({ dest: 1, sync: true }));
}

function scrubber(secrets: SecretRegistry): (line: string) => string {
  return (line) => secrets.scrub(line);
}

/** A logger that drops everything (library default when none is injected). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
