#!/usr/bin/env node
/**
 * The `mock-api` bin: {@link runMockApiCli} on the process's arguments; SIGINT / SIGTERM stop
 * the server (exit 0). A bad option prints one line `mock-api: error: …` and exits 2.
 *
 * @module
 */
import { runMockApiCli } from './main.js';

const controller = new AbortController();
const stop = (): void => controller.abort();
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
try {
  await runMockApiCli(process.argv.slice(2), { signal: controller.signal });
  process.exitCode = 0;
} catch (err) {
  const e = err as { message?: string; hint?: string; exitCode?: number };
  process.stderr.write(`mock-api: error: ${e.message ?? String(err)}${e.hint === undefined ? '' : ` (${e.hint})`}\n`);
  process.exitCode = typeof e.exitCode === 'number' ? e.exitCode : 1;
}
process.off('SIGINT', stop);
process.off('SIGTERM', stop);
