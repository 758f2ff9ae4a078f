/**
 * The one place that builds loggers. JSON lines to stdout for schedulers (pino), pretty
 * only when stdout is a TTY.
 *
 * Rules (RELIABILITY.md "Secrets and patient data", DESIGN.md guarantee 6):
 * - log objects built from allow-listed fields (counts, stream ids, run ids, durations,
 *   status codes, URL origins and paths without query strings);
 * - never a payload, a referral subject id, a token, a secret or a raw body;
 * - `redact` below is the safety net for headers and credential-shaped keys, not the plan.
 *
 * @module
 */
import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/** Keys censored wherever pino finds them (pino `redact` paths). */
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
  'referralSubjectId',
  '*.referralSubjectId',
  'referral_subject_id',
  '*.referral_subject_id',
];

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level; default `info`. */
  level?: string;
  /** Where lines go; default stdout (pretty when stdout is a TTY). */
  destination?: DestinationStream;
  /** Force pretty output (default: `process.stdout.isTTY`). Ignored when `destination` is given. */
  pretty?: boolean;
}

/**
 * Build the root logger.
 *
 * @returns a pino logger with redaction; children per stage via `logger.child({ stage })`.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const base = {
    level: options.level ?? 'info',
    redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    base: { app: 'recruit-etl' },
    timestamp: pino.stdTimeFunctions.isoTime,
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

/** A logger that drops everything (library default when none is injected). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
