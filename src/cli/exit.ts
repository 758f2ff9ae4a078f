/**
 * The only place that turns errors into exit codes and the one-line stderr message
 * (docs/contracts.md "Exit codes": `recruit-etl: error: …`, no stack trace unless `--verbose`).
 *
 * @module
 */
import { EtlError, ExitCode, InterruptedError } from '../errors.js';
import type { SecretRegistry } from '../log/secrets.js';

/**
 * Exit code and stderr text for an error. Pure: the caller writes and exits. The whole text
 * (message, hint, `--verbose` stacks and causes) is scrubbed of the run's secret values
 * (docs/security.md).
 */
export function describeFailure(err: unknown, verbose: boolean, secrets?: SecretRegistry): { exitCode: number; text: string } {
  const { exitCode, text } = describe(err, verbose);
  return { exitCode, text: secrets ? secrets.scrub(text) : text };
}

function describe(err: unknown, verbose: boolean): { exitCode: number; text: string } {
  if (err instanceof EtlError) {
    let text = `recruit-etl: error: ${err.message}`;
    if (err.hint) text += ` (${err.hint})`;
    if (verbose) text += `\n${formatVerbose(err)}`;
    return { exitCode: err.exitCode, text };
  }
  if (err instanceof Error && err.name === 'AbortError') {
    const e = new InterruptedError('SIGTERM');
    return { exitCode: e.exitCode, text: `recruit-etl: error: ${e.message}` };
  }
  const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
  let text = `recruit-etl: error: unexpected failure: ${message} (run again with --verbose for the stack trace and report it)`;
  if (verbose && err instanceof Error) text += `\n${err.stack ?? ''}`;
  return { exitCode: ExitCode.unexpected, text };
}

function formatVerbose(err: Error): string {
  const parts: string[] = [err.stack ?? ''];
  let cause: unknown = err.cause;
  let depth = 0;
  while (cause instanceof Error && depth < 5) {
    parts.push(`caused by: ${cause.stack ?? cause.message}`);
    cause = cause.cause;
    depth += 1;
  }
  return parts.join('\n');
}
