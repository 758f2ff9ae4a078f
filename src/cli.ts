#!/usr/bin/env node
/**
 * The `recruit-etl` binary: runs the CLI and exits with its code.
 * Files it creates (database, exports) are private: umask 077 (RELIABILITY.md "Files").
 *
 * @module
 */
import { run } from './cli/main.js';

process.umask(0o077);
const code = await run(process.argv.slice(2));
process.exitCode = code;
// Let pino's sync destination flush, then leave even if a handle lingers.
setImmediate(() => process.exit(code));
