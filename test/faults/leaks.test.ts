/**
 * Secrets and patient data (docs/contracts.md guarantees 5 and 6; docs/security.md).
 *
 * Planted canaries: a client secret, every token the token endpoint issued (recorded by a
 * proxy in front of it: the simulator only counts tokens), and a referral subject id. They
 * must appear in no stdout/stderr line of the CLI, at any log level, with --verbose, on
 * successful and failing runs; the secret and tokens must appear nowhere in the database,
 * its WAL, the published copy or the exports. The site list gets Origin, never Authorization.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startMockApi, type MockApi } from '../../packages/mock-api/src/index.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { logLines, runCli, type CliResult } from '../helpers/cli.js';
import { envFor } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';
import { expectedAll, readDb, expectExactly, startTokenTap, type TokenTap } from '../helpers/faults.js';

const SECRET = `CANARY-SECRET-${randomBytes(8).toString('hex')}`;

let api: MockApi;
let tap: TokenTap;
let tmp: ReturnType<typeof tempDir>;
let subject: string;
let db: string;
let exportDir: string;
let env: Record<string, string>;
const runs: Array<{ name: string; r: CliResult }> = [];

/** Files below `dir` (recursively). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? filesUnder(join(dir, d.name)) : [join(dir, d.name)]));
}

function canaries(): Array<[string, string]> {
  const list: Array<[string, string]> = [['client secret', SECRET]];
  for (const [i, t] of tap.tokens.entries()) {
    list.push([`token ${i + 1}`, t]);
    list.push([`token ${i + 1} signature`, t.split('.')[2]!]);
  }
  return list;
}

beforeAll(async () => {
  api = await startMockApi({ port: 0, seed: 5, patientsPerTrial: 10, clientSecret: SECRET, releaseFraction: 0.4 });
  tap = await startTokenTap(api.authUrl);
  tmp = tempDir('recruit-etl-leaks-');
  db = join(tmp.dir, 'wh', 'warehouse.duckdb');
  exportDir = join(tmp.dir, 'exports');
  // A subject whose events are already visible (it is logged nowhere, stored in the warehouse).
  subject = api.truth.events.slice(0, api.truth.visibleCount()).find((e) => e.referralSubjectId !== undefined)!.referralSubjectId!;
  env = envFor(api, db, {
    RECRUIT_ETL_AUTH_URL: tap.authUrl,
    RECRUIT_ETL_EXPORT_DIR: exportDir,
    RECRUIT_ETL_PAGE_SIZE: '20',
    RECRUIT_ETL_BATCH_PAGES: '1',
  });
  const run = async (name: string, args: string[], expectCode: number): Promise<void> => {
    const r = await runCli(args, env);
    runs.push({ name, r });
    expect(r.code, `${name}: ${r.stderr}`).toBe(expectCode);
  };
  // 1. The nightly run at info level, site list included.
  await run('run (info)', ['run'], 0);
  // 2. New events, everything logged: debug and --verbose.
  api.grow(Math.floor(api.truth.events.length * 0.2));
  await run('run (debug, verbose)', ['run', '--log-level', 'debug', '--verbose'], 0);
  // 3. Failing runs with --verbose (stacks and causes printed).
  api.grow(Math.floor(api.truth.events.length * 0.1));
  // An upstream that echoes the secret and a subject id in its error page.
  api.faults.add({
    endpoint: 'events',
    kind: 'status',
    code: 500,
    times: Infinity,
    body: `{"error":"server_error","client_secret":"${SECRET}","referralSubjectId":"${subject}"}`,
  });
  await run('upstream 500 echoing canaries', ['extract', '--log-level', 'debug', '--verbose', '--deadline', '3'], 4);
  api.faults.clear();
  // A 200 whose body is not JSON but quotes the subject and the secret (JSON.parse errors quote text).
  api.faults.add({ endpoint: 'events', kind: 'nonJson', times: Infinity, body: `referralSubjectId=${subject} secret=${SECRET} {` });
  await run('non-JSON body quoting canaries', ['extract', '--log-level', 'debug', '--verbose', '--deadline', '3'], 4);
  api.faults.clear();
  api.faults.add({ endpoint: 'events', kind: 'sameIdOtherPayload' });
  await run('changed payload', ['extract', '--log-level', 'debug', '--verbose'], 6);
  api.faults.clear();
  api.faults.add({ endpoint: 'events', kind: 'eventWithoutId' });
  await run('event without id', ['extract', '--log-level', 'trace'], 6);
  api.faults.clear();
  api.faults.add({ endpoint: 'events', kind: 'always401' });
  await run('401 after refresh', ['extract', '--log-level', 'debug', '--verbose'], 3);
  api.faults.clear();
  api.faults.add({ endpoint: 'events', kind: 'redirect', url: 'http://127.0.0.1:9/trap?token=x' });
  await run('redirect', ['extract', '--log-level', 'debug', '--verbose'], 6);
  api.faults.clear();
  // 4. The rest of the stream, then a clean run that publishes the copy and the exports.
  api.grow();
  await run('run (debug) to the end', ['run', '--log-level', 'debug'], 0);
  await run('status', ['status', '--verbose'], 0);
  await run('status --json', ['status', '--json'], 0);
}, 180_000);

afterAll(async () => {
  await tap?.close();
  await api?.close();
  tmp?.cleanup();
});

describe('canaries never reach the logs', () => {
  it('the setup is real: tokens were issued and recorded, logs were written, the data is complete', async () => {
    expect(tap.tokens.length).toBeGreaterThanOrEqual(3);
    expect(api.stats.tokensIssued).toBe(tap.tokens.length);
    const debug = runs.find((x) => x.name === 'run (debug, verbose)')!.r;
    const lines = logLines(debug.stdout);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.some((l) => l['level'] === 20)).toBe(true); // debug lines present
    const failing = runs.filter((x) => x.r.code !== 0);
    expect(failing.length).toBe(6);
    for (const f of failing) expect(f.r.stderr, f.name).toMatch(/recruit-etl: error: /);
    expectExactly(await readDb(db), expectedAll(api), api.truth.events);
  });

  it('no stdout or stderr line of any run holds the secret, a token or the subject id', () => {
    const all: Array<[string, string]> = [...canaries(), ['referral subject id', subject]];
    const leaks: string[] = [];
    for (const { name, r } of runs) {
      for (const [what, value] of all) {
        if (r.stdout.includes(value)) leaks.push(`${what} in stdout of "${name}"`);
        if (r.stderr.includes(value)) leaks.push(`${what} in stderr of "${name}"`);
      }
    }
    expect(leaks).toEqual([]);
  });

  it('no log line carries a Bearer header value or a query string with a cursor', () => {
    for (const { name, r } of runs) {
      expect(r.stdout + r.stderr, name).not.toMatch(/Bearer\s+[A-Za-z0-9_-]{8,}/);
      expect(r.stdout + r.stderr, name).not.toMatch(/[?&]cursor=/);
    }
  });
});

describe('canaries never reach the files', () => {
  it('the database, its WAL, the published copy and the exports hold neither the secret nor a token (bytes)', () => {
    const dir = join(tmp.dir, 'wh');
    const files = [...filesUnder(dir), ...filesUnder(exportDir)].filter((f) => statSync(f).isFile());
    expect(files).toContain(db);
    expect(files).toContain(join(dir, 'warehouse.readonly.duckdb'));
    expect(files.some((f) => f.endsWith('.parquet'))).toBe(true);
    expect(files).toContain(join(exportDir, 'manifest.json'));
    const leaks: string[] = [];
    for (const f of files) {
      const bytes = readFileSync(f);
      for (const [what, value] of canaries()) if (bytes.includes(Buffer.from(value, 'utf8'))) leaks.push(`${what} in ${f}`);
    }
    expect(leaks).toEqual([]);
    // Positive control: the byte search does find a value that IS stored (the subject id, in the exports).
    expect(files.some((f) => readFileSync(f).includes(Buffer.from(subject, 'utf8')))).toBe(true);
  });

  it('no row of any table (live file and published copy) holds the secret or a token (SQL over every column)', async () => {
    for (const file of [db, join(tmp.dir, 'wh', 'warehouse.readonly.duckdb')]) {
      const wh = await Warehouse.open(file, { readOnly: true });
      try {
        const tables = await wh.all<{ s: string; t: string }>(
          'select schema_name as s, table_name as t from duckdb_tables() where database_name = current_database() and not temporary',
        );
        expect(tables.length).toBeGreaterThan(5);
        // Every row of every table as text (the tables are small here), searched in JS.
        const text = new Map<string, string>();
        for (const { s, t } of tables) {
          const rows = await wh.all<{ v: string }>(`select x::varchar as v from "${s}"."${t}" x`);
          text.set(`${s}.${t}`, rows.map((r) => r.v).join('\n'));
        }
        const hits = (value: string): string[] => [...text].filter(([, v]) => v.includes(value)).map(([k]) => k);
        // Positive control: the subject id belongs in the warehouse, and the scan finds it.
        expect(hits(subject)).toContain('raw.events');
        for (const [what, value] of canaries()) expect(hits(value), `${what} in ${file}`).toEqual([]);
      } finally {
        await wh.close();
      }
    }
  });

  it('run errors recorded in etl.runs name what failed without payload, subject or secret', async () => {
    const state = await readDb(db);
    const failed = state.runs.filter((r) => r.status === 'failed');
    expect(failed.length).toBe(6);
    for (const r of failed) {
      expect(r.error).toBeTruthy();
      expect(r.error).not.toContain(subject);
      expect(r.error).not.toContain(SECRET);
    }
  });
});

describe('the site list', () => {
  it('carries Origin and never Authorization', () => {
    const siteRequests = api.stats.requestLog.filter((e) => e.path.startsWith('/microsites-api/'));
    expect(siteRequests.length).toBeGreaterThanOrEqual(api.truth.trialIds.length * 2);
    for (const e of siteRequests) {
      expect(e.hasAuthorization).toBe(false);
      expect(e.origin).toBe(api.options.allowedOrigins[0]);
      expect(e.status).toBe(200);
    }
    // And every events request did carry it (the log tells the two apart).
    expect(api.stats.requestLog.filter((e) => e.path === '/rpi/events').every((e) => e.hasAuthorization)).toBe(true);
  });
});
