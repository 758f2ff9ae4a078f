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
 * Keys censored wherever pino finds them (pino `redact` paths). `message` is special: see
 * {@link censor}.
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
  'referralSubjectId',
  '*.referralSubjectId',
  'referral_subject_id',
  '*.referral_subject_id',
];

/**
 * The redact censor. A `message` key holding a string is kept: that is an error's message
 * (`{ err }` as pino serialises it, or `{ err: { message } }`), and our errors never hold
 * payload text by construction while secrets are removed by value. A `message` holding
 * anything else (an event's payload object) and every other redacted key is censored.
 */
export function censor(value: unknown, path: string[]): unknown {
  if (path[path.length - 1] === 'message' && typeof value === 'string') return value;
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
