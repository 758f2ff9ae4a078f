#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 --heap-growing-percent=20
/**
 * The `recruit-etl` binary: runs the CLI and exits with its code.
 * Files it creates (database, exports) are private: umask 077 (`docs/architecture.md` "Files").
 *
 * The shebang caps V8's young generation at 4 MB per semi-space (Node 20's default grows to
 * 16 MB) and lets the old generation grow by 20 % between full collections (the default lets
 * it reach several times the live data): the extract's garbage is page text, and both keep its
 * peak RSS low. It also gives glibc's allocator two arenas instead of eight per core, which
 * keep fewer freed blocks of DuckDB's threads (`docs/ingest.md` "Settings"). V8 and glibc
 * read these at startup, so they live here. `node dist/cli.js` behaves the same, with more
 * memory at the extract's peak.
 *
 * @module
 */
import { run } from './cli/main.js';

process.umask(0o077);
const code = await run(process.argv.slice(2));
process.exitCode = code;
// Let pino's sync destination flush, then leave even if a handle lingers.
setImmediate(() => process.exit(code));
