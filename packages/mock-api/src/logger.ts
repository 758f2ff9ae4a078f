/**
 * The simulator's loggers (pino): one that writes nothing, the default of `startMockApi`,
 * and the CLI's, JSON lines on stdout (after the one "listening" line).
 *
 * @module
 */
import { pino, type Logger } from 'pino';

/** A logger that writes nothing. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** The `mock-api` CLI's logger: JSON lines on stdout, at `level` (a pino level name). */
export function cliLogger(level: string): Logger {
  return pino({ level, base: { name: 'mock-api' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd: 1, sync: true }));
}
