import { afterEach, describe, expect, it } from 'vitest';
import { AuthError, UpstreamContractError, UpstreamUnavailableError } from '../../../src/errors.js';
import { TokenProvider } from '../../../src/upstream/auth.js';
import { EventsClient, firstPageUrl, pageStream, PREFETCH_MAX_BYTES, type EventsPage } from '../../../src/upstream/events.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { captureLogger, fakeSleep, pageBody, sendJson, startStub, type Stub, type StubHandler } from './stub.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function stub(handler: StubHandler): Promise<Stub> {
  const s = await startStub(handler);
  cleanups.push(() => s.close());
  return s;
}

const SECRET = 'CANARY-SECRET-5f1e2d';

/** A token endpoint issuing CANARY-TOKEN-1, -2, ... */
async function tokenServer(status = 200): Promise<Stub> {
  let issued = 0;
  return stub((req, res) => {
    if (req.url !== '/oauth/token' || req.method !== 'POST') return sendJson(res, 404, {});
    if (status !== 200) return sendJson(res, status, { error: 'access_denied', error_description: `bad secret ${SECRET}` });
    issued += 1;
    sendJson(res, 200, { access_token: `CANARY-TOKEN-${issued}`, expires_in: 3600, token_type: 'Bearer', scope: 'x' });
  });
}

function setup(api: Stub, auth: Stub, policy: Record<string, number> = {}) {
  const { logger, lines } = captureLogger();
  const { sleep, waits } = fakeSleep();
  const http = new HttpClient({ policy: { headersTimeoutMs: 2000, bodyTimeoutMs: 2000, ...policy }, sleep, random: () => 0, logger });
  cleanups.push(() => http.close());
  const tokens = new TokenProvider({
    credentials: { authUrl: auth.origin, clientId: 'client-1', clientSecret: SECRET, audience: 'https://api.example' },
    http,
    logger,
  });
  const client = new EventsClient({ baseUrl: api.origin, http, tokens, logger });
  return { client, tokens, lines, waits, http };
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

async function collect(it: AsyncIterable<EventsPage>): Promise<EventsPage[]> {
  const out: EventsPage[] = [];
  for await (const p of it) out.push(p);
  return out;
}

const ev = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  eventType: 'v1.patient.created',
  publishedTime: '2024-01-01T00:00:00.000Z',
  message: { referralSubjectId: 'SUBJ-CANARY-1' },
  ...extra,
});

describe('EventsClient.fetchPage', () => {
  it('sends Bearer + Content-Type, token obtained once with the documented body', async () => {
    const auth = await tokenServer();
    const api = await stub((_req, res) => sendJson(res, 200, pageBody([ev('e1')], 'x', false)));
    const { client } = setup(api, auth);
    const url = firstPageUrl(api.origin, { trialIds: ['T1'], eventTypes: ['v1.patient.created'] });
    const page = await client.fetchPage(url);
    expect(page.events.all(page.events.id)).toEqual(['e1']);
    expect(api.requests[0]!.headers.authorization).toBe('Bearer CANARY-TOKEN-1');
    expect(api.requests[0]!.headers['content-type']).toBe('application/json');
    expect(auth.requests).toHaveLength(1);
    expect(auth.requests[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(auth.requests[0]!.body)).toEqual({
      client_id: 'client-1',
      client_secret: SECRET,
      audience: 'https://api.example',
      grant_type: 'client_credentials',
    });
  });

  it('401 → one refresh → success', async () => {
    const auth = await tokenServer();
    const api = await stub((req, res) =>
      req.headers.authorization === 'Bearer CANARY-TOKEN-1' ? sendJson(res, 401, {}) : sendJson(res, 200, pageBody([ev('e1')], 'n', false)),
    );
    const { client, tokens } = setup(api, auth);
    const page = await client.fetchPage(`${api.origin}/rpi/events?trialIds=T1`);
    expect(page.events.all(page.events.id)).toHaveLength(1);
    expect(api.requests).toHaveLength(2);
    expect(auth.requests).toHaveLength(2);
    expect(tokens.stats.requests).toBe(2);
  });

  it('401 twice → AuthError with exactly 2 event requests (no loop)', async () => {
    const auth = await tokenServer();
    const api = await stub((_req, res) => sendJson(res, 401, {}));
    const { client } = setup(api, auth);
    const err = await rejection(client.fetchPage(`${api.origin}/rpi/events?trialIds=T1`));
    expect(err).toBeInstanceOf(AuthError);
    expect((err as AuthError).exitCode).toBe(3);
    expect(api.requests).toHaveLength(2);
    expect(auth.requests).toHaveLength(2);
  });

  it('403 → AuthError; 400 and 404 → UpstreamContractError naming the status', async () => {
    const auth = await tokenServer();
    const statuses = [403, 400, 404];
    const api = await stub((_req, res, _b, n) => sendJson(res, statuses[n - 1]!, {}));
    const { client } = setup(api, auth);
    const url = `${api.origin}/rpi/events?q=1`;
    expect(await rejection(client.fetchPage(url))).toBeInstanceOf(AuthError);
    const e400 = await rejection(client.fetchPage(url));
    expect(e400).toBeInstanceOf(UpstreamContractError);
    expect(e400.message).toContain('HTTP 400');
    const e404 = await rejection(client.fetchPage(url));
    expect(e404).toBeInstanceOf(UpstreamContractError);
    expect(e404.message).toContain('HTTP 404');
    expect(api.requests).toHaveLength(3);
  });

  it.each([
    ['no pagination', JSON.stringify({ events: [] })],
    ['events not an array', JSON.stringify({ events: {}, pagination: { nextPage: 'x', hasNextPage: false } })],
    ['event without id', pageBody([{ eventType: 'v1.x' }], 'x', false)],
    ['event not an object', pageBody(['e1'], 'x', false)],
    ['nextPage not a string', JSON.stringify({ events: [], pagination: { nextPage: 5, hasNextPage: false } })],
    ['hasNextPage not boolean', JSON.stringify({ events: [], pagination: { nextPage: 'x', hasNextPage: 'no' } })],
  ])('contract break (%s) → UpstreamContractError at once, one request', async (_name, body) => {
    const auth = await tokenServer();
    const api = await stub((_req, res) => sendJson(res, 200, body));
    const { client } = setup(api, auth);
    const err = await rejection(client.fetchPage(`${api.origin}/rpi/events`));
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(api.requests).toHaveLength(1);
  });

  it('truncated page then a good one: the page is refetched whole from the same URL', async () => {
    const auth = await tokenServer();
    const good = pageBody([ev('e1'), ev('e2')], 'next', false);
    const api = await stub((_req, res, _b, n) => {
      if (n === 1) {
        res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
        res.end(good.slice(0, 40));
      } else sendJson(res, 200, good);
    });
    const { client } = setup(api, auth);
    const page = await client.fetchPage(`${api.origin}/rpi/events?c=1`);
    expect(page.events.all(page.events.envelope)).toEqual((JSON.parse(good) as { events: unknown[] }).events.map((e) => JSON.stringify(e)));
    expect(api.requests.map((r) => r.url)).toEqual(['/rpi/events?c=1', '/rpi/events?c=1']);
  });

  it('keeps unknown keys, tolerates name instead of eventType without altering the object', async () => {
    const auth = await tokenServer();
    const body = pageBody(
      [
        { id: 'e1', name: 'v1.patient.contactAttempt.created', publishedTime: 'x', message: {}, newField: { a: 1 } },
        { id: 'e2', eventType: 'v2.patient.created', message: {}, __proto__x: 1 },
      ],
      'n',
      false,
    );
    const api = await stub((_req, res) => sendJson(res, 200, body));
    const { client } = setup(api, auth);
    const page = await client.fetchPage(`${api.origin}/rpi/events`);
    expect(page.events.all(page.events.type)).toEqual(['v1.patient.contactAttempt.created', 'v2.patient.created']);
    expect(JSON.parse(page.events.all(page.events.envelope)[0]!)).toEqual(JSON.parse(body).events[0]);
    expect(page.events.all(page.events.envelope)[1]).toBe(JSON.stringify(JSON.parse(body).events[1]));
  });

  it('503 then 200 through the events client (retried inside the HTTP layer)', async () => {
    const auth = await tokenServer();
    const api = await stub((_req, res, _b, n) => (n <= 2 ? sendJson(res, 503, {}) : sendJson(res, 200, pageBody([], 'n', false))));
    const { client } = setup(api, auth);
    await client.fetchPage(`${api.origin}/rpi/events`);
    expect(api.requests).toHaveLength(3);
    expect(auth.requests).toHaveLength(1);
  });
});

describe('pageStream', () => {
  function pagedApi(total: number, perPage: number): Promise<Stub> {
    let api: Stub;
    const p = stub((req, res) => {
      const u = new URL(req.url!, api.origin);
      const from = Number(u.searchParams.get('after') ?? '0');
      const events = [];
      for (let i = from + 1; i <= Math.min(total, from + perPage); i++) events.push(ev(`e${i}`));
      const last = from + events.length;
      sendJson(res, 200, pageBody(events, `${api.origin}/rpi/events?after=${last}`, last < total));
    });
    return p.then((s) => (api = s));
  }

  it.each([true, false])('follows nextPage to the end, in order (prefetch %s)', async (prefetch) => {
    const auth = await tokenServer();
    const api = await pagedApi(10, 3);
    const { client } = setup(api, auth);
    const pages = await collect(pageStream(client, `${api.origin}/rpi/events?after=0`, { label: 's1', prefetch }));
    expect(pages.map((p) => p.events.all(p.events.id).length)).toEqual([3, 3, 3, 1]);
    expect(pages.flatMap((p) => p.events.all(p.events.id))).toEqual(Array.from({ length: 10 }, (_, i) => `e${i + 1}`));
    expect(pages.at(-1)!.nextPage).toBe(`${api.origin}/rpi/events?after=10`);
    expect(pages.at(-1)!.hasNextPage).toBe(false);
    expect(api.requests).toHaveLength(4);
  });

  it('a nextPage that carries the access token, as is or percent-encoded, is refused (exit 6): the cursor is stored, the published copy held the token before', async () => {
    for (const encode of [false, true]) {
      const auth = await tokenServer();
      let api: Stub;
      api = await stub((req, res) => {
        const token = String(req.headers.authorization).replace(/^Bearer /, '');
        const cursor = encode ? encodeURIComponent(`k:${token}`).replace(/-/g, '%2D') : token;
        sendJson(res, 200, pageBody([ev('e1')], `${api.origin}/rpi/events/${cursor}?c=2`, true));
      });
      const { client } = setup(api, auth);
      const err = await rejection(collect(pageStream(client, `${api.origin}/rpi/events`, { label: 's1' })));
      expect(err).toBeInstanceOf(UpstreamContractError);
      expect(err.message).toBe('stream s1, page 1: nextPage carries the access token or the client secret; the page is refused');
      expect(err.message).not.toContain('CANARY');
    }
  });

  it('an empty poll (hasNextPage false, nextPage = the URL requested) is normal', async () => {
    const auth = await tokenServer();
    const api = await pagedApi(10, 3);
    const { client } = setup(api, auth);
    const start = `${api.origin}/rpi/events?after=10`;
    const pages = await collect(pageStream(client, start, { label: 's1' }));
    expect(pages).toHaveLength(1);
    expect(pages[0]!.events.count).toBe(0);
    expect(pages[0]!.nextPage).toBe(start);
  });

  it('a failure on page 3 keeps pages 1-2 delivered and names stream and page', async () => {
    const auth = await tokenServer();
    let api: Stub;
    api = await stub((_req, res, _b, n) => {
      if (n === 3)
        return sendJson(res, 200, JSON.stringify({ events: [{ noId: true }], pagination: { nextPage: 'x', hasNextPage: true } }));
      sendJson(res, 200, pageBody([ev(`e${n}`)], `${api.origin}/rpi/events?p=${n + 1}`, true));
    });
    const { client } = setup(api, auth);
    const seen: string[] = [];
    const err = await rejection(
      (async () => {
        for await (const p of pageStream(client, `${api.origin}/rpi/events?p=1`, { label: 'main' }))
          seen.push(p.events.all(p.events.id)[0]!);
      })(),
    );
    expect(seen).toEqual(['e1', 'e2']);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err.message).toMatch(/^stream main, page 3: /);
  });

  it('unavailable upstream on page 2 → exit 4 naming stream and page', async () => {
    const auth = await tokenServer();
    let api: Stub;
    api = await stub((_req, res, _b, n) =>
      n === 1 ? sendJson(res, 200, pageBody([ev('e1')], `${api.origin}/rpi/events?p=2`, true)) : sendJson(res, 503, {}),
    );
    const { client } = setup(api, auth, { maxAttempts: 2 });
    const err = await rejection(collect(pageStream(client, `${api.origin}/rpi/events?p=1`, { label: 'main' })));
    expect(err).toBeInstanceOf(UpstreamUnavailableError);
    expect(err.message).toMatch(
      /^stream main, page 2: GET http:\/\/127\.0\.0\.1:\d+ \(the stream's cursor\) failed after 2 attempts; last: HTTP 503/,
    );
  });

  it('stopping early aborts the prefetch in flight (its connection is closed)', async () => {
    const auth = await tokenServer();
    let api: Stub;
    let prefetchClosed = false;
    api = await stub((_req, res, _b, n) => {
      if (n === 1) return sendJson(res, 200, pageBody([ev('e1')], `${api.origin}/rpi/events?p=2`, true));
      res.on('close', () => (prefetchClosed = true)); // page 2 never answers
    });
    const { client } = setup(api, auth);
    for await (const p of pageStream(client, `${api.origin}/rpi/events?p=1`)) {
      expect(p.events.all(p.events.id)).toHaveLength(1);
      for (let i = 0; i < 100 && api.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
      expect(api.requests).toHaveLength(2); // the prefetch was sent while the caller held page 1
      break;
    }
    for (let i = 0; i < 100 && !prefetchClosed; i++) await new Promise((r) => setTimeout(r, 10));
    expect(prefetchClosed).toBe(true);
  });
});

describe('secrets canary', () => {
  it('secret, tokens and subject ids never appear in logs or error messages', async () => {
    const auth = await tokenServer();
    let n = 0;
    const api = await stub((req, res) => {
      n += 1;
      if (n === 1) return sendJson(res, 401, { detail: `token ${req.headers.authorization} expired` });
      if (n === 2) return sendJson(res, 503, { detail: 'SUBJ-CANARY-1' });
      if (n === 3) {
        res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
        return res.end('{"events":[{"id":"e1","message":{"referralSubjectId":"SUBJ-CANARY-1"');
      }
      if (n === 4) return sendJson(res, 200, pageBody([ev('e1')], `${api.origin}/rpi/events?c=CANARY-TOKEN-in-cursor`, true));
      return sendJson(res, 401, {});
    });
    const { client, lines, http } = setup(api, auth);
    const errors: Error[] = [];
    errors.push(await rejection(collect(pageStream(client, `${api.origin}/rpi/events?x=1`, { label: 's' }))));
    // token endpoint refusing, echoing the secret in its body
    const refusing = await tokenServer(401);
    const tokens2 = new TokenProvider({
      credentials: { authUrl: refusing.origin, clientId: 'c', clientSecret: SECRET, audience: 'a' },
      http,
      logger: captureLogger().logger,
    });
    errors.push(await rejection(tokens2.getToken()));
    expect(errors[0]).toBeInstanceOf(AuthError);
    expect(errors[1]).toBeInstanceOf(AuthError);
    expect(errors[1]!.message).toContain('HTTP 401 access_denied');
    expect(lines.length).toBeGreaterThan(3);
    const everything = [...lines, ...errors.map((e) => `${e.message} ${String((e as { hint?: string }).hint)}`)].join('\n');
    expect(everything).not.toMatch(/CANARY-(SECRET|TOKEN)/);
    expect(everything).not.toContain('SUBJ-CANARY');
    expect(everything).not.toContain('?');
  });

  it(`a page over ${PREFETCH_MAX_BYTES} bytes is not fetched ahead of: the next request waits for the caller`, async () => {
    const auth = await tokenServer();
    let api: Stub;
    const pad = 'x'.repeat(PREFETCH_MAX_BYTES);
    api = await stub((_req, res, _b, n) =>
      sendJson(res, 200, pageBody([ev(`e${n}`, n === 1 ? { message: { pad } } : {})], `${api.origin}/rpi/events?p=${n + 1}`, n < 3)),
    );
    const { client } = setup(api, auth);
    const held: number[] = [];
    for await (const p of pageStream(client, `${api.origin}/rpi/events?p=1`)) {
      await new Promise((r) => setTimeout(r, 50));
      held.push(api.requests.length);
      expect(p.events.count).toBe(1);
    }
    // While the caller held page 1 (large) nothing more was asked; while it held page 2 (small), page 3 was.
    expect(held).toEqual([1, 3, 3]);
  });
});
