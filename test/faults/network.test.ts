/**
 * Network faults (docs/contracts.md guarantees 1, 4, 5; docs/architecture.md "The upstream client and undici").
 *
 * Every case pages 13 pages of 10 events with one page per transaction and hits page 4
 * (`after: 3`). Each run either succeeds with raw.events exactly the expected events, or
 * ends with the documented exit code with pages 1–3 kept, nothing of page 4, and the cursor
 * right after page 3; then a clean run resumes and completes exactly.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { FaultRule } from '../../packages/mock-api/src/index.js';
import { FIXTURE_PAGE, useSimFixture } from '../helpers/simFixture.js';
import {
  capturingLogger,
  closedPort,
  expectExactly,
  expectPrefix,
  expectedAll,
  extractOnce,
  readDb,
  startRawUpstream,
  startTrap,
  type Outcome,
} from '../helpers/faults.js';

const PAGE = FIXTURE_PAGE;
const AFTER = 3; // fault on the 4th events request = page 4

const fx = useSimFixture('recruit-etl-net-', 'w');
beforeEach(() => {
  expect(fx.expected.length).toBeGreaterThan(PAGE * 10);
});

type Rule = Omit<FaultRule, 'endpoint'>;

/** A transient fault on page 4 that clears within the retry budget: the run succeeds exactly once. */
async function expectRecovers(rule: Rule, retries: number): Promise<Outcome> {
  fx.api.faults.add({ endpoint: 'events', after: AFTER, ...rule });
  const db = fx.freshDb();
  const out = await extractOnce(fx.api, db, { pageSize: PAGE });
  expect(out.message).toBe('');
  expect(out.exitCode).toBe(0);
  expect(fx.api.faults.fired().length).toBeGreaterThanOrEqual(1);
  expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  expect(out.result!.extract!.eventsLoaded).toBe(fx.expected.length);
  // Each retry sends the page again whole; the page counts once.
  expect(fx.api.stats.eventRequests - out.result!.extract!.pages).toBe(retries);
  return out;
}

/** A fault on page 4 that outlasts the retry budget: exit `code`, pages 1–3 kept, then a clean run completes. */
async function expectFailsKeepingPrefix(rule: Rule, code: number, requestsForBadPage: number): Promise<Outcome> {
  fx.api.faults.add({ endpoint: 'events', after: AFTER, ...rule });
  const db = fx.freshDb();
  const out = await extractOnce(fx.api, db, { pageSize: PAGE });
  expect(out.exitCode, out.message).toBe(code);
  expect(out.message).toMatch(/^recruit-etl: error: /);
  expect(out.message).toContain('page 4');
  expect(fx.api.stats.eventRequests).toBe(AFTER + requestsForBadPage);
  const state = await readDb(db);
  expectPrefix(state, fx.expected, AFTER * PAGE, fx.api.truth.events);
  expect(state.runs.at(-1)!.status).toBe('failed');
  // The stored cursor is good: once the fault is gone the next run completes exactly.
  fx.api.faults.clear();
  const again = await extractOnce(fx.api, db, { pageSize: PAGE });
  expect(again.exitCode, again.message).toBe(0);
  expect(again.result!.extract!.resumed).toBe(true);
  expect(again.result!.extract!.eventsLoaded).toBe(fx.expected.length - AFTER * PAGE);
  expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  return out;
}

describe('transient HTTP statuses', () => {
  it('503 burst then clean: retried, every event once', async () => {
    await expectRecovers({ kind: 'status', code: 503, times: 2 }, 2);
  });

  it.each([500, 502, 504, 408])('%i once then clean: retried, every event once', async (code) => {
    await expectRecovers({ kind: 'status', code, times: 1 }, 1);
  });

  it('503 that outlasts the retries: exit 4, pages 1-3 kept, nothing of page 4', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'status', code: 503, times: Infinity }, 4, 3);
    expect(out.message).toMatch(/after 3 attempts; last: HTTP 503/);
  });

  it('429 with Retry-After in seconds: waits that long, then succeeds', async () => {
    const out = await expectRecovers({ kind: 'status', code: 429, retryAfter: 1, times: 1 }, 1);
    // The fast policy backs off 5-20 ms: only the Retry-After explains a second.
    expect(out.ms).toBeGreaterThanOrEqual(1000);
  });

  it('429 with Retry-After as an HTTP-date: waits until then, then succeeds', async () => {
    const at = new Date(Date.now() + 2500).toUTCString(); // second resolution: 1.5-2.5 s from now
    const out = await expectRecovers({ kind: 'status', code: 429, retryAfter: at, times: 1 }, 1);
    expect(out.ms).toBeGreaterThanOrEqual(1000);
  });

  it('429 asking for longer than the job waits: exit 4 at once, no retry, not cut short silently', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'status', code: 429, retryAfter: 3600, times: Infinity }, 4, 1);
    expect(out.ms).toBeLessThan(5000);
    expect(out.message).toMatch(/Retry-After/);
  });

  it('429 without Retry-After that persists: exit 4 after the retries', async () => {
    await expectFailsKeepingPrefix({ kind: 'status', code: 429, times: Infinity }, 4, 3);
  });
});

describe('timeouts and broken connections', () => {
  it('headers that never come (once): timed out, retried, succeeds', async () => {
    await expectRecovers({ kind: 'headersNever', times: 1 }, 1);
  });

  it('headers that never come (always): exit 4 within the timeouts', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'headersNever', times: Infinity }, 4, 3);
    expect(out.ms).toBeLessThan(10_000);
    expect(out.message).toMatch(/headers timeout/);
  });

  it('a body that stalls (once): timed out, fetched again whole, succeeds', async () => {
    await expectRecovers({ kind: 'bodyStall', at: 100, times: 1 }, 1);
  });

  it('a body that stalls (always): exit 4', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'bodyStall', at: 100, times: Infinity }, 4, 3);
    expect(out.message).toMatch(/body timeout/);
  });

  it('a reset mid-body (once): fetched again whole from the same cursor, succeeds', async () => {
    await expectRecovers({ kind: 'resetMidBody', at: 200, times: 1 }, 1);
  });

  it('a reset mid-body (always): exit 4', async () => {
    await expectFailsKeepingPrefix({ kind: 'resetMidBody', at: 200, times: Infinity }, 4, 3);
  });

  it('connection refused (the API went away mid-life): exit 4, state untouched; back on the same port, the run completes', async () => {
    const db = fx.freshDb();
    // First night: half of the stream.
    const port = await closedPort();
    await fx.restart({ port, releaseFraction: 0.5 });
    const first = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(first.exitCode, first.message).toBe(0);
    const before = await readDb(db);
    const half = before.ids.length;
    expect(half).toBeGreaterThan(0);
    // The API is down: nothing listens on the port any more.
    await fx.api.close();
    const down = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(down.exitCode, down.message).toBe(4);
    expect(down.message).toMatch(/ECONNREFUSED/);
    const during = await readDb(db);
    expect(during.ids).toEqual(before.ids);
    expect(during.streams).toEqual(before.streams);
    expect(during.runs.at(-1)!.status).toBe('failed');
    // Back up with everything released: the stored cursor resumes.
    await fx.restart({ port });
    const full = expectedAll(fx.api);
    const third = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(third.exitCode, third.message).toBe(0);
    expect(third.result!.extract!.eventsLoaded).toBe(full.length - half);
    expectExactly(await readDb(db), full, fx.api.truth.events);
  });

  it('connection refused on the very first page: exit 4, nothing stored, no cursor', async () => {
    const port = await closedPort();
    const db = fx.freshDb();
    // Token from the simulator, events from a closed port.
    const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: `http://127.0.0.1:${port}` });
    expect(out.exitCode, out.message).toBe(4);
    const state = await readDb(db);
    expect(state.ids).toEqual([]);
    expect(state.streams[0]!.nextPage).toBeNull();
  });
});

describe('unreadable bodies', () => {
  it.each([0, 1, 57, 400, 2000])('truncated at byte %i with a content-length (once): fetched again, succeeds', async (at) => {
    await expectRecovers({ kind: 'truncated', at, times: 1 }, 1);
  });

  it.each([1, 300])('truncated at byte %i, chunked, no final chunk (once): fetched again, succeeds', async (at) => {
    await expectRecovers({ kind: 'truncated', at, chunked: true, times: 1 }, 1);
  });

  it('truncated (always): exit 4, nothing of the page', async () => {
    await expectFailsKeepingPrefix({ kind: 'truncated', at: 300, times: Infinity }, 4, 3);
  });

  it('truncated and chunked (always): exit 4, nothing of the page', async () => {
    await expectFailsKeepingPrefix({ kind: 'truncated', at: 300, chunked: true, times: Infinity }, 4, 3);
  });

  it('a 200 whose body is not JSON (once): retried, succeeds', async () => {
    await expectRecovers({ kind: 'nonJson', times: 1 }, 1);
  });

  it('a 200 whose body is not JSON (always): exit 4, the body is not quoted', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'nonJson', body: '{"events":[ SENTINEL-BODY-TEXT', times: Infinity }, 4, 3);
    expect(out.message).not.toContain('SENTINEL-BODY-TEXT');
  });

  it('text/html with 200 (once): retried, succeeds', async () => {
    await expectRecovers({ kind: 'html200', times: 1 }, 1);
  });

  it('text/html with 200 (always): exit 4, the page is not quoted', async () => {
    const out = await expectFailsKeepingPrefix({ kind: 'html200', times: Infinity }, 4, 3);
    expect(out.message).not.toMatch(/Bad Gateway|<html/i);
  });

  it('an oversized body: exit 6 at once naming --max-page-bytes and the stream, NOT retried (it was exit 4 "lower --page-size": the same cursor returns the same page)', async () => {
    const big = await (async () => {
      fx.api.faults.add({ endpoint: 'events', after: AFTER, kind: 'oversized', size: 1024 * 1024, times: Infinity });
      const db = fx.freshDb();
      const out = await extractOnce(fx.api, db, { pageSize: PAGE }, { maxResponseBytes: 256 * 1024 });
      return { out, db };
    })();
    expect(big.out.exitCode, big.out.message).toBe(6);
    expect(big.out.message).toMatch(/^recruit-etl: error: stream s_[0-9a-f]+, page 4: .*larger than --max-page-bytes \(262144 bytes\)/);
    expect(big.out.message).toMatch(/raise --max-page-bytes/);
    expect(big.out.message).not.toMatch(/lower --page-size|try again later/);
    expect(fx.api.stats.eventRequests).toBe(AFTER + 1);
    expectPrefix(await readDb(big.db), fx.expected, AFTER * PAGE, fx.api.truth.events);
  });
});

describe('redirects', () => {
  it('a 302 to another origin: exit 6, not followed (the trap receives nothing), pages 1-3 kept', async () => {
    const trap = await startTrap();
    try {
      const out = await expectFailsKeepingPrefix({ kind: 'redirect', url: `${trap.url}/rpi/events?cursor=stolen`, times: Infinity }, 6, 1);
      expect(out.message).toMatch(/redirect/);
      expect(trap.connections).toBe(0);
      expect(trap.requests).toEqual([]);
    } finally {
      await trap.close();
    }
  });

  it('a 302 to the same origin is not followed either: exit 6', async () => {
    await expectFailsKeepingPrefix({ kind: 'redirect', url: `${fx.api.baseUrl}/rpi/events?cursor=elsewhere`, times: 1 }, 6, 1);
  });
});

describe('raw upstream responses the simulator does not make (first page; the token still comes from the simulator)', () => {
  /** An events endpoint that answers every request with `answer`; returns its base URL, a request counter and close. */
  async function rawUpstream(
    answer: (res: ServerResponse) => void,
  ): Promise<{ baseUrl: string; requests: () => number; close: () => Promise<void> }> {
    let count = 0;
    const server = createServer((req, res) => {
      count++;
      req.resume();
      answer(res);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      requests: () => count,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  it('an oversized chunked body (no content-length): exit 6 after ONE request, the stream limit applies', async () => {
    const up = await rawUpstream((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = (): void => {
        while (sent < 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('{}');
      };
      res.write('{"events":[');
      pump();
    });
    try {
      const db = fx.freshDb();
      const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: up.baseUrl }, { maxResponseBytes: 256 * 1024 });
      expect(out.exitCode, out.message).toBe(6);
      expect(out.message).toMatch(/larger than --max-page-bytes \(262144 bytes\)/);
      expect(up.requests()).toBe(1);
      expectPrefix(await readDb(db), fx.expected, 0, fx.api.truth.events);
    } finally {
      await up.close();
    }
  });

  it('a body that is not valid UTF-8 (always): retried, then exit 4; nothing stored', async () => {
    const up = await rawUpstream((res) => {
      const body = Buffer.concat([
        Buffer.from('{"events":[],"pagination":{"nextPage":"x'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('","hasNextPage":false}}'),
      ]);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      res.end(body);
    });
    try {
      const db = fx.freshDb();
      const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: up.baseUrl });
      expect(out.exitCode, out.message).toBe(4);
      expect(out.message).toMatch(/UTF-8/);
      expect(up.requests()).toBe(3);
      expectPrefix(await readDb(db), fx.expected, 0, fx.api.truth.events);
    } finally {
      await up.close();
    }
  });

  it('a content-encoding that was not asked for: exit 6 at once', async () => {
    const up = await rawUpstream((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': '4' });
      res.end(Buffer.from([0x1f, 0x8b, 0x08, 0x00]));
    });
    try {
      const db = fx.freshDb();
      const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: up.baseUrl });
      expect(out.exitCode, out.message).toBe(6);
      expect(up.requests()).toBe(1);
    } finally {
      await up.close();
    }
  });
});

describe('malformed HTTP framing is the upstream\'s, never exit 1 (it was "unexpected failure: Response does not match the HTTP/1.1 protocol", exit 1)', () => {
  /** Any control character but the line breaks between a message and its hint. */
  const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/;
  const cases: [string, string][] = [
    [
      'both Transfer-Encoding and Content-Length',
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
    ],
    [
      'both Transfer-Encoding and a Content-Length undici reads as a mismatch',
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n',
    ],
    [
      'a control character in a Location header',
      'HTTP/1.1 302 Found\r\nLocation: /rpi/events/SUBJ-0042\u0001\u001b[31m\r\nContent-Length: 0\r\nConnection: close\r\n\r\n',
    ],
    [
      'two different Content-Length headers',
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}',
    ],
    ['a status line that is not HTTP/1.1', 'HTTP/1.1 2OO OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'],
    ['a control character in a header name', 'HTTP/1.1 200 OK\r\nX-B\u0007d: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'],
  ];
  for (const [what, raw] of cases) {
    it(`${what}: retried, then exit 4; the message, the log and etl.runs quote no control character`, async () => {
      const up = await startRawUpstream(() => raw);
      const { logger, lines } = capturingLogger();
      try {
        const db = fx.freshDb();
        const out = await extractOnce(fx.api, db, { pageSize: PAGE, baseUrl: up.baseUrl }, {}, logger);
        expect(out.exitCode, out.message).toBe(4);
        // undici calls a length it cannot square with the framing a length mismatch.
        expect(out.message).toMatch(/malformed HTTP response|shorter or longer than its content-length/);
        expect(out.message).not.toMatch(/unexpected failure|does not match/);
        expect(out.message).not.toMatch(CONTROL);
        expect(out.message).not.toContain('SUBJ-0042');
        expect(up.requests()).toBe(3); // FAST_POLICY: 3 attempts
        const state = await readDb(db);
        expectPrefix(state, fx.expected, 0, fx.api.truth.events);
        const error = state.runs.at(-1)!.error ?? '';
        expect(error).toMatch(/malformed HTTP response|content-length/);
        expect(error).not.toMatch(CONTROL);
        expect(error).not.toContain('SUBJ-0042');
        const log = lines.join('');
        expect(log).toMatch(/malformed HTTP response|content-length/);
        expect(log).not.toContain('SUBJ-0042');
        for (const line of lines) expect(JSON.stringify(JSON.parse(line))).not.toMatch(/\\u000[0-8bcef]|\\u001[0-9a-f]/);
      } finally {
        await up.close();
      }
    });
  }
});
