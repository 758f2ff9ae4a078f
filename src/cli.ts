#!/usr/bin/env -S node --max-semi-space-size=4
/**
 * The `recruit-etl` binary: runs the CLI and exits with its code.
 * Files it creates (database, exports) are private: umask 077 (RELIABILITY.md "Files").
 *
 * The shebang caps V8's young generation at 4 MB per semi-space (Node 20's default grows to
 * 16 MB): the extract's garbage is page text that dies young. With the extract's
 * `EXTRACT_V8_HEAP_GROWING_PERCENT` (src/pipeline/jobs.ts) it keeps the extract's peak RSS
 * under 256 MiB (bench at 1M events: the cap alone is worth 30–40 MiB). It is a flag of the
 * V8 heap's layout, read once at startup, so it lives here and not in the code. `node
 * dist/cli.js` behaves the same, with the larger default young generation.
 *
 * @module
 */
import { run } from './cli/main.js';

process.umask(0o077);
const code = await run(process.argv.slice(2));
process.exitCode = code;
// Let pino's sync destination flush, then leave even if a handle lingers.
setImmediate(() => process.exit(code));
