import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamContractError, UpstreamUnavailableError } from '../../../src/errors.js';
import { HttpClient, TransientBodyError, type HttpPolicy } from '../../../src/upstream/http.js';
import { parseJsonBody } from '../../../src/upstream/json.js';
import { fakeSleep, sendJson, startStub, type Stub } from './stub.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function stub(handler: Parameters<typeof startStub>[0]): Promise<Stub> {
  const s = await startStub(handler);
  cleanups.push(() => s.close());
  return s;
}

function client(policy: Partial<HttpPolicy> = {}, extra: { now?: () => number } = {}) {
  const { sleep, waits } = fakeSleep();
  const http = new HttpClient({
    policy: { headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000, ...policy },
    sleep,
    random: () => 0.5,
    ...extra,
  });
  cleanups.push(() => http.close());
  return { http, waits };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('HttpClient retries', () => {
  it('503 twice then 200: success after 3 requests, backoff grows x2 with jitter', async () => {
    const s = await stub((_req, res, _b, n) => (n <= 2 ? sendJson(res, 503, { e: 1 }) : sendJson(res, 200, { ok: true })));
    const { http, waits } = client();
    const res = await http.getText(`${s.origin}/x?cursor=abc`, {});
    expect(res.status).toBe(200);
    expect(JSON.parse(res.bodyText)).toEqual({ ok: true });
    expect(s.requests).toHaveLength(3);
    expect(s.requests[2]!.url).toBe('/x?cursor=abc');
    // random 0.5 → half of 500 and of 1000.
    expect(waits).toEqual([250, 500]);
  });

  it('503 forever: exit-4 error naming path (no query), last status and attempts', async () => {
    const s = await stub((_req, res) => sendJson(res, 503, {}));
    const { http } = client({ maxAttempts: 4 });
    const err = await rejection(http.getText(`${s.origin}/rpi/events?secretCursor=1`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect((err as UpstreamUnavailableError).exitCode).toBe(4);
    expect(err.message).toContain(`${s.origin}/rpi/events`);
    expect(err.message).not.toContain('secretCursor');
    expect(err.message).toContain('HTTP 503');
    expect(err.message).toContain('4 attempts');
    expect(s.requests).toHaveLength(4);
  });

  it('429 with Retry-After seconds is honoured exactly', async () => {
    const s = await stub((_req, res, _b, n) => (n === 1 ? sendJson(res, 429, {}, { 'retry-after': '7' }) : sendJson(res, 200, [])));
    const { http, waits } = client();
    const res = await http.getText(`${s.origin}/x`, {});
    expect(res.status).toBe(200);
    expect(waits).toEqual([7000]);
  });

  it('429 with Retry-After as an HTTP-date is honoured', async () => {
    const now = Date.UTC(2030, 0, 1, 12, 0, 0);
    const s = await stub((_req, res, _b, n) =>
      n === 1 ? sendJson(res, 429, {}, { 'retry-after': new Date(now + 12_000).toUTCString() }) : sendJson(res, 200, []),
    );
    const { http, waits } = client({}, { now: () => now });
    await http.getText(`${s.origin}/x`, {});
    expect(waits).toEqual([12_000]);
    expect(s.requests).toHaveLength(2);
  });

  it('Retry-After above the cap fails loudly with exit 4 naming the wait, no silent cut', async () => {
    const s = await stub((_req, res) => sendJson(res, 503, {}, { 'retry-after': '600' }));
    const { http, waits } = client();
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('wait 600 s');
    expect(waits).toEqual([]);
    expect(s.requests).toHaveLength(1);
  });

  it('4xx (not 429) is returned to the caller without retry', async () => {
    const s = await stub((_req, res) => sendJson(res, 404, { error: 'nope' }));
    const { http } = client();
    const res = await http.getText(`${s.origin}/x`, {});
    expect(res.status).toBe(404);
    expect(s.requests).toHaveLength(1);
  });

  it('a 302 is not followed: UpstreamContractError, the Location target receives nothing', async () => {
    const trap = await stub((_req, res) => sendJson(res, 200, []));
    const s = await stub((_req, res) => {
      res.writeHead(302, { location: `${trap.origin}/stolen?token=x` });
      res.end();
    });
    const { http } = client();
    const err = await rejection(http.getText(`${s.origin}/x`, { authorization: 'Bearer t' }));
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).toContain('302');
    expect(err.message).not.toContain('token=x');
    expect(trap.requests).toHaveLength(0);
  });

  it('reset mid-body: the whole request is sent again, never a Range request', async () => {
    const full = JSON.stringify({ data: 'x'.repeat(5000) });
    const s = await stub((req, res, _b, n) => {
      if (n === 1) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full) });
        res.write(full.slice(0, 1000), () => setTimeout(() => req.socket.destroy(), 20));
        return;
      }
      sendJson(res, 200, full);
    });
    const { http } = client();
    const res = await http.getText(`${s.origin}/page?c=1`, {}, { parse: parseJsonBody });
    expect(res.bodyText).toBe(full);
    expect(s.requests).toHaveLength(2);
    expect(s.requests[1]!.url).toBe('/page?c=1');
    expect(s.requests[1]!.headers.range).toBeUndefined();
    expect(s.requests[1]!.headers['if-match']).toBeUndefined();
  });

  it('truncated JSON (connection closes early, no content-length) is retried then exit 4', async () => {
    const s = await stub((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
      res.end('{"events":[{"id":"e1","message":{"referralSubjectId":"SUBJ');
    });
    const { http } = client({ maxAttempts: 3 });
    const err = await rejection(http.getText(`${s.origin}/x`, {}, { parse: parseJsonBody }));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('truncated');
    expect(err.message).not.toContain('SUBJ');
    expect(s.requests).toHaveLength(3);
  });

  it('text/html with 200 is retried then exit 4 without quoting the body', async () => {
    const s = await stub((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html>maintenance PAGE-MARKER</html>');
    });
    const { http } = client({ maxAttempts: 2 });
    const err = await rejection(http.getText(`${s.origin}/x`, {}, { parse: parseJsonBody }));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('not valid JSON');
    expect(err.message).toContain('text/html');
    expect(err.message).not.toContain('PAGE-MARKER');
    expect(s.requests).toHaveLength(2);
  });

  it('invalid UTF-8 is an unreadable body: retried', async () => {
    const s = await stub((_req, res, _b, n) => {
      const body = n === 1 ? Buffer.from([0x5b, 0x22, 0xff, 0xfe, 0x22, 0x5d]) : Buffer.from('["ok"]');
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
    const { http } = client();
    const res = await http.getText(`${s.origin}/x`, {});
    expect(res.bodyText).toBe('["ok"]');
    expect(s.requests).toHaveLength(2);
  });

  it('headers that never come: headers timeout, retried, then exit 4', async () => {
    const s = await stub(() => {
      /* never answers */
    });
    const { http } = client({ headersTimeoutMs: 150, maxAttempts: 2 });
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('headers timeout');
    expect(s.requests).toHaveLength(2);
  });

  it('informational responses (103) that never end in a final one: headers timeout all the same, retried, then exit 4 (a run hung for ever before)', async () => {
    const timers: NodeJS.Timeout[] = [];
    cleanups.push(async () => timers.forEach(clearInterval));
    const s = await stub((_req, res) => {
      timers.push(setInterval(() => res.writeEarlyHints({ link: '</a.css>; rel=preload' }), 30));
    });
    const { http } = client({ headersTimeoutMs: 300, maxAttempts: 2 });
    const started = Date.now();
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('headers timeout');
    expect(s.requests).toHaveLength(2);
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 10_000);

  it('a body that stalls: body timeout, retried, then exit 4', async () => {
    const s = await stub((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
      res.write('{"a":');
    });
    const { http } = client({ bodyTimeoutMs: 150, maxAttempts: 2 });
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('body timeout');
    expect(s.requests).toHaveLength(2);
  });

  it('connection refused: retried then exit 4', async () => {
    const s = await startStub(() => undefined);
    const origin = s.origin;
    await s.close();
    const { http, waits } = client({ maxAttempts: 3 });
    const err = await rejection(http.getText(`${origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('ECONNREFUSED');
    expect(waits).toHaveLength(2);
  });

  it('an oversized body fails at once (not retried), streamed or declared', async () => {
    const big = JSON.stringify({ a: 'y'.repeat(5000) });
    const s = await stub((_req, res, _b, n) => {
      if (n === 1) {
        res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no length up front
        res.end(big);
      } else sendJson(res, 200, big);
    });
    const { http } = client({ maxResponseBytes: 1000 });
    for (let i = 0; i < 2; i++) {
      const err = await rejection(http.getText(`${s.origin}/x`, {}));
      expect(err).toBeInstanceOf(UpstreamContractError);
      expect(err.message).toContain('larger than --max-page-bytes (1000 bytes)');
    }
    expect(s.requests).toHaveLength(2);
  });

  it('a request undici refuses to build from a server-issued value (a header with CR LF) is exit 6, nothing sent, the value not quoted (it was exit 1)', async () => {
    const s = await stub((_req, res) => sendJson(res, 200, {}));
    const { http } = client();
    const err = await rejection(http.getText(`${s.origin}/x`, { authorization: 'Bearer abc\r\nX-Injected: SUBJ-0042' }));
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).toMatch(/could not be sent/);
    expect(err.message).not.toMatch(/SUBJ-0042|\r|\n/);
    expect(s.requests).toHaveLength(0);
  });

  it('a parser that throws TransientBodyError gets the whole request again', async () => {
    const s = await stub((_req, res, _b, n) => sendJson(res, 200, { n }));
    const { http } = client();
    const res = await http.getText(
      `${s.origin}/x`,
      {},
      {
        parse: (r) => {
          const v = JSON.parse(r.bodyText) as { n: number };
          if (v.n < 3) throw new TransientBodyError('not yet');
          return v.n;
        },
      },
    );
    expect(res.parsed).toBe(3);
    expect(s.requests).toHaveLength(3);
  });

  it('abort while waiting for headers rethrows the reason promptly, no retry', async () => {
    const s = await stub(() => undefined);
    const http = new HttpClient({ policy: { headersTimeoutMs: 10_000 } });
    cleanups.push(() => http.close());
    const ac = new AbortController();
    const reason = new Error('stop now');
    setTimeout(() => ac.abort(reason), 100);
    const started = Date.now();
    const err = await rejection(http.getText(`${s.origin}/x`, {}, { signal: ac.signal }));
    expect(err).toBe(reason);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(s.requests).toHaveLength(1);
  });

  it('abort during a retry wait (real timer) rethrows the reason', async () => {
    const s = await stub((_req, res) => sendJson(res, 503, {}, { 'retry-after': '60' }));
    const http = new HttpClient({});
    cleanups.push(() => http.close());
    const ac = new AbortController();
    const reason = new Error('interrupted');
    setTimeout(() => ac.abort(reason), 200);
    const err = await rejection(http.getText(`${s.origin}/x`, {}, { signal: ac.signal }));
    expect(err).toBe(reason);
    expect(s.requests).toHaveLength(1);
  });

  it('the run deadline stops retries with exit 4', async () => {
    let clock = 1_000_000;
    const s = await stub((_req, res) => sendJson(res, 503, {}, { 'retry-after': '30' }));
    const { http } = client({ deadlineMs: clock + 10_000 }, { now: () => clock });
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('deadline');
    expect(s.requests).toHaveLength(1);
    clock += 20_000;
    const err2 = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err2.message).toContain('deadline');
    expect(s.requests).toHaveLength(1);
  });

  it('never adds Authorization on its own', async () => {
    const s = await stub((_req, res) => sendJson(res, 200, []));
    const { http } = client();
    await http.getText(`${s.origin}/x`, { origin: 'https://study.example' });
    await http.postText(`${s.origin}/y`, JSON.stringify({ a: 1 }), { 'content-type': 'application/json' });
    expect(s.requests.every((r) => r.headers.authorization === undefined)).toBe(true);
    expect(s.requests[1]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(s.requests[1]!.body)).toEqual({ a: 1 });
  });

  it('POST is retried on 5xx (bounded by maxPostAttempts) but not on 400', async () => {
    const s = await stub((_req, res, _b, n) => (n <= 2 ? sendJson(res, 502, {}) : sendJson(res, 400, { error: 'invalid_request' })));
    const { http } = client({ maxPostAttempts: 4 });
    const res = await http.postText(`${s.origin}/t`, '{}', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(s.requests).toHaveLength(3);
  });
});

describe('whole-body deadline (bodyTotalTimeoutMs)', () => {
  /** A response that sends its head, then one byte every 200 ms: never silent long enough for bodyTimeoutMs. */
  function drip(status: number, closed: { n: number }) {
    return stub((_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': 1000 });
      const timer = setInterval(() => res.write(' '), 200);
      res.on('close', () => {
        clearInterval(timer);
        closed.n += 1;
      });
    });
  }

  it('a body dripping one byte every 200 ms: total timeout, retried, exit 4 within a bounded time; connections closed', async () => {
    const closed = { n: 0 };
    const s = await drip(200, closed);
    const { http } = client({ bodyTimeoutMs: 2_000, bodyTotalTimeoutMs: 1_000, maxAttempts: 2 });
    const started = Date.now();
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    const elapsed = Date.now() - started;
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect((err as UpstreamUnavailableError).exitCode).toBe(4);
    expect(err.message).toContain('failed after 2 attempts; last: body total timeout');
    expect(s.requests).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(1_900);
    expect(elapsed).toBeLessThan(4_000);
    // Both bodies were destroyed: the server sees both connections close, none is left dripping.
    await new Promise((r) => setTimeout(r, 100));
    expect(closed.n).toBe(2);
  });

  it('a dripping 503 body being discarded is cut at the same deadline', async () => {
    const closed = { n: 0 };
    const s = await drip(503, closed);
    const { http } = client({ bodyTimeoutMs: 2_000, bodyTotalTimeoutMs: 600, maxAttempts: 2 });
    const started = Date.now();
    const err = await rejection(http.getText(`${s.origin}/x`, {}));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toContain('last: HTTP 503');
    expect(Date.now() - started).toBeLessThan(3_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(closed.n).toBe(2);
  });

  it('the default is 120 000 ms', async () => {
    const http = new HttpClient();
    expect(http.policy.bodyTotalTimeoutMs).toBe(120_000);
    await http.close();
  });
});
