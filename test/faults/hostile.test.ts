/**
 * Hostile upstream input (docs/ingest.md): what today's simulator faults send must never
 * brick the warehouse, drop an event silently, keep a run alive for ever or put payload text
 * into an error. Each test is named after what broke before.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runJob } from '../../src/pipeline/jobs.js';
import { describeFailure } from '../../src/cli/exit.js';
import { readStatus } from '../../src/warehouse/readStatus.js';
import { publishedCopyPath } from '../../src/warehouse/publishCopy.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { FIXTURE_PAGE, useSimFixture } from '../helpers/simFixture.js';
import { configFor, envFor } from '../helpers/sim.js';
import { runCli } from '../helpers/cli.js';
import { capturingLogger, expectExactly, expectPrefix, extractOnce, fastHttp, readDb, startRawUpstream } from '../helpers/faults.js';

const PAGE = FIXTURE_PAGE;

const fx = useSimFixture('recruit-etl-hostile-', 'h');

/** Every stage of `run` (sites aside) in-process; the exit code a failure maps to. */
async function runAll(db: string, extra: Record<string, unknown> = {}): Promise<{ exitCode: number; message: string }> {
  const http = fastHttp();
  try {
    await runJob('run', ['extract', 'transform', 'export'], {
      config: configFor(fx.api, db, { pageSize: PAGE, exportDir: join(fx.tmp.dir, `exp${fx.count}`), ...extra }),
      http,
    });
    return { exitCode: 0, message: '' };
  } catch (err) {
    const { exitCode, text } = describeFailure(err, false);
    return { exitCode, message: text };
  } finally {
    await http.close();
  }
}

describe('quarantine, never brick (a lone surrogate made every later transform fail, exit 1, for good)', () => {
  it('an event with a lone surrogate keeps its place, is stored readable, its text kept beside it; every later command succeeds', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'loneSurrogate', after: 2, event: 4 });
    const db = fx.freshDb();
    const first = await runAll(db);
    expect(first.exitCode, first.message).toBe(0);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
    // Run again (nothing new), then read everything back: transform, export, status all succeed.
    expect((await runAll(db)).exitCode).toBe(0);
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const q = await wh.all<{ p: bigint; id: string; body: string }>(
        'select stream_position as p, event_id as id, body from raw.quarantined_events',
      );
      expect(q).toHaveLength(1);
      const id = fx.expected[2 * PAGE + 3]!.id;
      expect(q[0]!.id).toBe(id);
      expect(Number(q[0]!.p)).toBe(2 * PAGE + 4);
      expect(q[0]!.body).toContain('\\ud800');
      const stored = await wh.one<{ note: string; ok: boolean }>(
        "select message->>'note' as note, json_valid(envelope) as ok from raw.events where event_id = ?",
        [id],
      );
      expect(stored).toEqual({ note: 'x\ufffdy', ok: true });
      const dq = await wh.all<{ check_name: string; issue_count: bigint }>(
        "select check_name, issue_count from main.dq_summary where check_name = 'dq_quarantined_events'",
      );
      expect(Number(dq[0]!.issue_count)).toBe(1);
      const status = await readStatus(wh);
      expect(status.streams.find((s) => s.status === 'active')!.quarantined).toBe(1);
      const runs = await wh.all<{ summary: string }>(
        "select summary::varchar as summary from etl.runs where command = 'run' order by started_at limit 1",
      );
      expect(JSON.parse(runs[0]!.summary).extract.quarantined).toBe(1);
    } finally {
      await wh.close();
    }
  });
});

describe('one reading of a page', () => {
  it('keys spelt with escapes ("\\u0065vents", "\\u0069d") are read as the names they spell (exit 1 / exit 6 on every rerun before)', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'escapedKeys', after: 1, times: 3 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
    const wh = await Warehouse.open(db, { readOnly: true });
    try {
      const mismatch = await wh.one<{ n: bigint }>(
        "select count(*) as n from raw.events where event_id is distinct from (envelope->>'id')",
      );
      expect(Number(mismatch!.n)).toBe(0);
    } finally {
      await wh.close();
    }
  });

  it('a redelivery with its keys in another order is the same event (exit 6 on every rerun before)', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'reorderedRedelivery', after: 3, times: 2 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expect(out.result!.extract!.duplicatesSkipped).toBe(2);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });
});

describe('bounded time (a run could last for ever)', () => {
  it('endless empty pages with hasNextPage true: exit 6 after --max-empty-pages, naming the stream and the count (41,901 requests in 30 s before)', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'emptyPagesForever', after: 3 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toMatch(/stream s_[0-9a-f]+, page \d+: 1000 pages in a row brought no event/);
    expect(fx.api.stats.eventRequests).toBeLessThanOrEqual(3 + 1000 + 2);
    // The events before the empty pages are kept; the empty pages were valid pages, committed with their cursors.
    expect((await readDb(db)).ids).toEqual(fx.expected.slice(0, 3 * PAGE).map((e) => e.id));
    // 1,000 page commits: 26-42 s on 2 cores under load, so more than the default 60 s of room.
  }, 180_000);

  it('a cursor cycle longer than one page is refused (exit 6) before the first URL is requested again', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'nextPage', variant: 'longCycle', length: 5, after: 2 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toMatch(/a cycle/);
  });

  it('a body sent one byte at a time never trips the between-chunks timeout, but --body-timeout ends it: exit 4 in bounded time', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'drip', ms: 50, after: 2, times: 10 });
    const db = fx.freshDb();
    const started = Date.now();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE }, { bodyTotalTimeoutMs: 300, maxAttempts: 2 });
    expect(out.exitCode, out.message).toBe(4);
    expect(Date.now() - started).toBeLessThan(10_000);
    expectPrefix(await readDb(db), fx.expected, 2 * PAGE, fx.api.truth.events);
  });
});

describe('the run log tells the truth (a run was marked succeeded, then exited 7)', () => {
  it('a run whose published copy cannot be written exits 7 and is recorded as failed', async () => {
    const db = fx.freshDb();
    // A non-empty folder where the copy goes: the rename over it fails.
    mkdirSync(publishedCopyPath(db), { recursive: true });
    writeFileSync(join(publishedCopyPath(db), 'x'), 'x');
    const out = await runAll(db);
    expect(out.exitCode, out.message).toBe(7);
    const state = await readDb(db);
    expect(state.runs.at(-1)!.status).toBe('failed');
    expect(state.runs.at(-1)!.error).toMatch(/cannot publish the read-only copy/);
  });
});

describe('messages name what the job asked for, never what the server answered with (a redirect quoted a subject id on stderr, in the log and in etl.runs)', () => {
  const SUBJECT = 'SUBJ-0042-7731';
  /** One raw HTTP/1.1 response. */
  const http11 = (status: string, headers: Record<string, string>, body = ''): string =>
    `HTTP/1.1 ${status}\r\n${Object.entries({ ...headers, 'content-length': String(Buffer.byteLength(body)), connection: 'close' })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n${body}`;
  /** A valid first page whose nextPage (same origin) holds the subject id in its path and query. */
  const firstPage = (base: string, next = `${base}/rpi/events/${SUBJECT}/more?subject=${SUBJECT}`): string =>
    http11(
      '200 OK',
      { 'content-type': 'application/json' },
      JSON.stringify({
        events: [{ id: 'evt-1', eventType: 'v1.patient.created', publishedTime: '2026-01-01T00:00:00Z', message: { note: 'ok' } }],
        pagination: { nextPage: next, hasNextPage: true },
      }),
    );

  /** Extract against a raw upstream answering page 1 with `first` and every later request with `later`; nothing of the subject id may show. */
  async function expectNoSubject(
    first: (base: string) => string,
    later: (base: string) => string,
    code: number,
    policy: Record<string, unknown> = {},
  ): Promise<string> {
    const up = await startRawUpstream((n, base) => (n === 1 ? first(base) : later(base)));
    const { logger, lines } = capturingLogger();
    try {
      const db = fx.freshDb();
      const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: up.baseUrl }, policy, logger);
      expect(out.exitCode, out.message).toBe(code);
      expect(out.message).not.toContain(SUBJECT);
      expect(out.message).not.toContain('SUBJ-');
      const state = await readDb(db);
      const run = state.runs.at(-1)!;
      expect(run.status).toBe('failed');
      expect(run.error ?? '').not.toBe('');
      expect(run.error).not.toContain('SUBJ-');
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('')).not.toContain('SUBJ-');
      return out.message;
    } finally {
      await up.close();
    }
  }

  for (const status of ['301 Moved Permanently', '302 Found', '303 See Other', '308 Permanent Redirect']) {
    it(`a ${status.slice(0, 3)} whose Location path holds a subject id: exit 6, the Location named by its origin only`, async () => {
      const message = await expectNoSubject(
        firstPage,
        (base) => http11(status, { location: `${base}/patients/${SUBJECT}/referral?id=${SUBJECT}` }),
        6,
      );
      expect(message).toMatch(/a redirect to http:\/\/127\.0\.0\.1:\d+; redirects are not followed/);
    });
  }

  it('a redirect of the first request to another origin, the id in its path: exit 6, named by origin', async () => {
    const message = await expectNoSubject(
      (_base) => http11('302 Found', { location: `https://evil.example:8443/p/${SUBJECT}` }),
      () => '',
      6,
    );
    expect(message).toContain('a redirect to https://evil.example:8443;');
  });

  it('a nextPage on another origin holding a subject id: exit 6, named by origin', async () => {
    const message = await expectNoSubject(
      (base) => firstPage(base, `http://evil.example:81/subjects/${SUBJECT}?s=${SUBJECT}`),
      () => '',
      6,
    );
    expect(message).toContain('nextPage is on origin http://evil.example:81');
  });

  // Every other message that names the URL requested: the cursor is the server's, so its origin only.
  const later: [string, (base: string) => string, number, Record<string, unknown>?][] = [
    ['HTTP 400', () => http11('400 Bad Request', { 'content-type': 'application/json' }, '{}'), 6],
    ['HTTP 403', () => http11('403 Forbidden', {}, ''), 3],
    ['HTTP 401 twice', () => http11('401 Unauthorized', {}, ''), 3],
    ['HTTP 503 until the retries are spent', () => http11('503 Service Unavailable', {}, ''), 4],
    ['a Retry-After longer than the job waits', () => http11('429 Too Many Requests', { 'retry-after': '99999' }, ''), 4],
    ['a body that is not JSON', () => http11('200 OK', { 'content-type': 'application/json' }, `{"events":[${SUBJECT}`), 4],
    ['a content-encoding not asked for', () => http11('200 OK', { 'content-encoding': 'gzip' }, 'xx'), 6],
    [
      'a body over --max-page-bytes',
      () => http11('200 OK', { 'content-type': 'application/json' }, `{"pad":"${'x'.repeat(8000)}"}`),
      6,
      { maxResponseBytes: 4096 },
    ],
    ['malformed framing', () => 'HTTP/1.1 200 OK\r\nX-A\u0001: 1\r\nContent-Length: 2\r\n\r\n{}', 4],
  ];
  for (const [what, answer, code, policy] of later) {
    it(`${what} on a nextPage whose path holds a subject id: exit ${code}, the cursor named by its origin`, async () => {
      const message = await expectNoSubject(firstPage, answer, code, policy ?? {});
      expect(message).toMatch(/page 2: .*http:\/\/127\.0\.0\.1:\d+ \(the stream's cursor\)/);
    });
  }
});

describe('a large page strands the stream no more (a 20 MB page was exit 4 "lower --page-size" on every run: the page size is fixed by the cursor)', () => {
  it('a 20 MB page is read and committed in slices; a run killed between two slices resumes from the same page, every event once', async () => {
    // Two pages, each padded to 20 MB every time it is sent (the same bytes again on the resumed run).
    fx.api.faults.add({ endpoint: 'events', kind: 'padEvents', bytes: 20_000_000, times: Infinity });
    const db = fx.freshDb();
    const pageSize = Math.ceil(fx.expected.length / 2);
    const env = envFor(fx.api, db, { RECRUIT_ETL_PAGE_SIZE: String(pageSize), RECRUIT_ETL_FAILPOINT: 'extract.after-commit:1' });
    const killed = await runCli(['extract'], env, { timeoutMs: 60_000 });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    // The first slice is committed with the page's own URL as the cursor: the next run fetches the page again.
    const mid = await readDb(db);
    expect(mid.ids.length).toBeGreaterThan(0);
    expect(mid.ids.length).toBeLessThan(pageSize);
    expect(mid.ids).toEqual(fx.expected.slice(0, mid.ids.length).map((e) => e.id));
    expect(mid.streams[0]!.nextPage).toMatch(/\/rpi\/events\?/);
    expect(mid.streams[0]!.eventCount).toBe(mid.ids.length);
    const again = await runCli(['extract'], { ...env, RECRUIT_ETL_FAILPOINT: '' }, { timeoutMs: 60_000 });
    expect(again.code, again.stderr).toBe(0);
    const state = await readDb(db);
    expectExactly(state, fx.expected, fx.api.truth.events);
    expect(state.positions).toEqual(fx.expected.map((_, i) => i + 1));
    expect(fx.api.stats.eventRequests).toBeGreaterThanOrEqual(3); // page 1 fetched again
  }, 120_000);
});
