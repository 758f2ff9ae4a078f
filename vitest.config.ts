import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/*
 * Three test tiers (README.md "Tests"), each a vitest project, chosen by folder so that a new
 * file lands in a tier without an edit here:
 *   unit         test/unit/**: pure logic, no child process, no network, no DuckDB file
 *   integration  every other folder: real DuckDB files, loopback servers, the built CLI
 *   slow         the files below (crash, incremental property tests, lake, browser, dbt, and
 *                any file that takes more than about 20 s on 2 quiet cores)
 * `make test-fast` runs unit and integration; `make test` runs all three.
 */

/** Files of test/unit/ that start a process or wait on one: run with the integration tier. */
const NOT_PURE = [
  'test/unit/fs/inputFile.test.ts', // mkfifo, a shell that opens the FIFO after 3 s
  'test/unit/docs/citations.test.ts', // git ls-files
];

/** The slow tier, by folder and by file: whatever the folder, a file listed here is only in `slow`. */
const SLOW = [
  'test/crash/**/*.test.ts', // SIGKILL at every failpoint, then a resume
  'test/integration/lake/**/*.test.ts', // a private PostgreSQL cluster, DuckLake
  'test/e2e/reportBrowser.test.ts', // chromium
  'test/**/*{dbt,Dbt}*.test.ts', // dbt-duckdb from the project's .venv
  'test/integration/transform/incremental.test.ts', // property test: random splits of a stream
  'test/integration/deploy/install.test.ts', // deploy/install.sh into scratch roots
  'test/integration/deploy/image.test.ts', // the image's install replayed: npm ci --omit=dev from the cache
  // Over 40 s each in one run of the first two tiers with 8 other jobs on the 2 cores (load 22;
  // 19-32 s each when run alone at load 7-12): the built CLI run again and again against the
  // simulator. A file that grows past that joins this list.
  'test/e2e/cleanRun.test.ts',
  'test/e2e/cli.test.ts',
  'test/e2e/operator.test.ts',
  'test/e2e/streams.test.ts',
  'test/faults/contract.test.ts',
  'test/faults/hostile.test.ts',
  'test/faults/leaks.test.ts',
  'test/faults/network.test.ts',
  'test/faults/signals.test.ts',
  'test/integration/extract/extract.test.ts',
  'test/integration/upstream/tokenServers.test.ts', // 47 s at load 15 (oidc-provider, oauth2-mock-server)
];

const TEST = '*.test.ts';

/**
 * The workspace packages from their TypeScript sources (packages/<name>/src), as the tests import the
 * simulator: one copy of each module, and no build needed for the unit tier. The built CLI
 * (integration, slow) loads their dist/ like any install.
 */
const PACKAGE_SOURCES = [
  { find: /^@recruit-etl\/event-types$/, replacement: fileURLToPath(new URL('packages/event-types/src/index.ts', import.meta.url)) },
  {
    find: /^@recruit-etl\/mock-api\/flags$/,
    replacement: fileURLToPath(new URL('packages/mock-api/src/mockApiFlags.ts', import.meta.url)),
  },
  { find: /^@recruit-etl\/mock-api$/, replacement: fileURLToPath(new URL('packages/mock-api/src/index.ts', import.meta.url)) },
];

export default defineConfig({
  resolve: { alias: PACKAGE_SOURCES },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: integration tests open DuckDB files and child processes.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: [`test/unit/**/${TEST}`], exclude: [...NOT_PURE, ...SLOW] } },
      {
        extends: true,
        test: { name: 'integration', include: [`test/${TEST}`, `test/!(unit)/**/${TEST}`, ...NOT_PURE], exclude: SLOW },
      },
      { extends: true, test: { name: 'slow', include: SLOW } },
    ],
  },
});
