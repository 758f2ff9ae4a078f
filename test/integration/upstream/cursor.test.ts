import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamContractError } from '../../../src/errors.js';
import { TokenProvider } from '../../../src/upstream/auth.js';
import { EventsClient, pageStream, type EventsPage } from '../../../src/upstream/events.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { pageBody, sendJson, startStub, type Stub } from './stub.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface World {
  api: Stub;
  trap: Stub;
  client: EventsClient;
}

/**
 * `pages(api, trap)` maps a request path+query to [nextPage, hasNextPage]; every page has one
 * event. The trap server stands for any other origin and must receive nothing.
 */
async function world(next: (pathAndQuery: string, w: { api: string; trap: string; port: number }) => [string, boolean]): Promise<World> {
  const trap = await startStub((_req, res) => sendJson(res, 200, pageBody([], 'x', false)));
  let api: Stub;
  api = await startStub((req, res, _b, n) => {
    if (req.url === '/oauth/token') return sendJson(res, 200, { access_token: 'CANARY-TOKEN-1', expires_in: 3600, token_type: 'Bearer' });
    const [nextPage, hasNext] = next(req.url!, { api: api.origin, trap: trap.origin, port: api.port });
    sendJson(res, 200, pageBody([{ id: `e${n}`, eventType: 'v1.patient.created', message: {} }], nextPage, hasNext));
  });
  cleanups.push(
    () => api.close(),
    () => trap.close(),
  );
  const http = new HttpClient({ policy: { maxAttempts: 1 } });
  cleanups.push(() => http.close());
  const tokens = new TokenProvider({ credentials: { authUrl: api.origin, clientId: 'c', clientSecret: 's', audience: 'a' }, http });
  await tokens.getToken();
  return { api, trap, client: new EventsClient({ baseUrl: api.origin, http, tokens }) };
}

async function run(w: World, start: string, prefetch = true): Promise<{ pages: EventsPage[]; err: Error | undefined }> {
  const pages: EventsPage[] = [];
  try {
    for await (const p of pageStream(w.client, start, { label: 'stream-A', prefetch })) pages.push(p);
  } catch (err) {
    return { pages, err: err as Error };
  }
  return { pages, err: undefined };
}

const eventRequests = (s: Stub) => s.requests.filter((r) => r.url !== '/oauth/token');

describe('cursor safety: a bad nextPage is refused before its page is yielded; the trap gets nothing', () => {
  it.each<[string, (w: { api: string; trap: string; port: number }) => string, string]>([
    ['other origin', (w) => `${w.trap}/rpi/events?c=2`, 'is on origin'],
    ['other scheme', (w) => `https://127.0.0.1:${w.port}/rpi/events?c=2`, 'is on origin https://'],
    ['other port', (w) => `${w.trap}/rpi/events?c=2`, 'is on origin'],
    ['other host (localhost vs 127.0.0.1)', (w) => `http://localhost:${w.port}/rpi/events?c=2`, 'is on origin'],
    ['user info', (w) => `http://user:pw@127.0.0.1:${w.port}/rpi/events?c=2`, 'carries user info'],
    ['relative', () => `/rpi/events?c=2`, 'not an absolute URL'],
    ['oversized', (w) => `${w.api}/rpi/events?c=${'x'.repeat(17 * 1024)}`, 'characters long'],
  ])('%s on page 2', async (_name, bad, why) => {
    for (const prefetch of [true, false]) {
      const w = await world((url, o) => (url === '/rpi/events?c=1' ? [`${o.api}/rpi/events?c=2`, true] : [bad(o), true]));
      const { pages, err } = await run(w, `${w.api.origin}/rpi/events?c=1`, prefetch);
      expect(pages).toHaveLength(1);
      expect(err).toBeInstanceOf(UpstreamContractError);
      expect(err!.message).toMatch(/^stream stream-A, page 2: nextPage /);
      expect(err!.message).toContain(why);
      expect(err!.message).not.toContain('?c=');
      expect(eventRequests(w.api)).toHaveLength(2);
      expect(w.trap.requests).toHaveLength(0);
    }
  });

  it('a foreign nextPage on the LAST page (hasNextPage false) is refused too: it would be stored', async () => {
    const w = await world((_url, o) => [`${o.trap}/rpi/events?c=2`, false]);
    const { pages, err } = await run(w, `${w.api.origin}/rpi/events?c=1`);
    expect(pages).toHaveLength(0);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(w.trap.requests).toHaveLength(0);
  });

  it('unchanged nextPage while hasNextPage is true', async () => {
    const w = await world((url, o) => [`${o.api}${url}`, true]);
    const { pages, err } = await run(w, `${w.api.origin}/rpi/events?c=1`);
    expect(pages).toHaveLength(0);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err!.message).toContain('page 1: nextPage equals the URL just requested');
    expect(eventRequests(w.api)).toHaveLength(1);
  });

  it('a cycle c=1 → c=2 → c=3 → c=1', async () => {
    const w = await world((url, o) => [`${o.api}/rpi/events?c=${(Number(url.split('c=')[1]) % 3) + 1}`, true]);
    const { pages, err } = await run(w, `${w.api.origin}/rpi/events?c=1`);
    expect(pages).toHaveLength(2);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err!.message).toContain('page 3: nextPage repeats a URL already requested');
    expect(eventRequests(w.api)).toHaveLength(3);
  });

  it('a start URL on another origin is refused by fetchPage before anything is sent', async () => {
    const w = await world(() => ['x', false]);
    const { err } = await run(w, `${w.trap.origin}/rpi/events?c=1`);
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect(err!.message).toMatch(/^stream stream-A, page 1: refusing to send the token/);
    expect(w.trap.requests).toHaveLength(0);
    expect(eventRequests(w.api)).toHaveLength(0);
  });

  it('nextPage on the same origin but another path is followed verbatim', async () => {
    const w = await world((url, o) => (url === '/rpi/events?c=1' ? [`${o.api}/v2/cursor/abc%2Fdef?z=1`, true] : [`${o.api}${url}`, false]));
    const { pages, err } = await run(w, `${w.api.origin}/rpi/events?c=1`);
    expect(err).toBeUndefined();
    expect(pages).toHaveLength(2);
    expect(eventRequests(w.api)[1]!.url).toBe('/v2/cursor/abc%2Fdef?z=1');
  });
});
