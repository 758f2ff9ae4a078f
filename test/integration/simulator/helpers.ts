import type { MockApi } from '../../../packages/mock-api/src/index.js';

export interface Page {
  events: Array<Record<string, unknown>>;
  pagination: { nextPage: string; hasNextPage: boolean };
}

export async function getToken(api: MockApi): Promise<string> {
  const res = await fetch(`${api.authUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: api.options.clientId,
      client_secret: api.options.clientSecret,
      audience: api.options.audience,
      grant_type: 'client_credentials',
    }),
  });
  if (res.status !== 200) throw new Error(`token: ${res.status}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

export function eventsUrl(
  api: MockApi,
  q: { eventTypes: readonly string[]; trialIds: readonly string[]; limit?: number; startingAfter?: string },
): string {
  const sp = new URLSearchParams();
  for (const t of q.eventTypes) sp.append('eventTypes', t);
  for (const t of q.trialIds) sp.append('trialIds', t);
  if (q.limit !== undefined) sp.set('limit', String(q.limit));
  if (q.startingAfter !== undefined) sp.set('startingAfter', q.startingAfter);
  return `${api.baseUrl}/rpi/events?${sp.toString()}`;
}

export async function getPage(url: string, token: string): Promise<Page> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`events: ${res.status} ${await res.text()}`);
  return (await res.json()) as Page;
}

/** Pages until hasNextPage is false; returns all events, the pages and the last nextPage. */
export async function readAll(
  url: string,
  token: string,
): Promise<{ events: Array<Record<string, unknown>>; pages: Page[]; last: string }> {
  const events: Array<Record<string, unknown>> = [];
  const pages: Page[] = [];
  let next = url;
  for (let guard = 0; guard < 100_000; guard++) {
    const page = await getPage(next, token);
    pages.push(page);
    events.push(...page.events);
    next = page.pagination.nextPage;
    if (!page.pagination.hasNextPage) return { events, pages, last: next };
  }
  throw new Error('did not end');
}
