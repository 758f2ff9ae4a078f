import { afterEach, describe, expect, it } from 'vitest';
import { AuthError, ConfigError, UpstreamContractError, UpstreamUnavailableError } from '../../../src/errors.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { SitesClient } from '../../../src/upstream/sites.js';
import { fakeSleep, sendJson, startStub, rejection, type Stub, type StubHandler } from './stub.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(handler: StubHandler, maxAttempts = 3): Promise<{ api: Stub; sites: SitesClient }> {
  const api = await startStub(handler);
  const http = new HttpClient({ policy: { maxAttempts }, sleep: fakeSleep().sleep });
  cleanups.push(
    () => api.close(),
    () => http.close(),
  );
  return { api, sites: new SitesClient({ baseUrl: api.origin, origin: 'https://study.example.org', http }) };
}

const site = {
  siteId: 's-1',
  displayName: 'Site One',
  siteName: 'One',
  sponsorSiteId: 'sp-1',
  street: 'Main 1',
  address1: 'Main 1',
  address2: null,
  city: 'Town',
  state: 'ST',
  postalCode: '12345',
  country: 'US',
  phoneNumber: '+1 555',
  latitude: 40.5,
  longitude: -73.9,
  futureField: { a: 1 },
};

describe('SitesClient', () => {
  it('sends Origin and never Authorization; path segments are encoded; records kept as sent', async () => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, [site]));
    const out = await sites.fetchSites('micro site/1', 'trial?1');
    expect(api.requests[0]!.url).toBe('/microsites-api/v1/micro%20site%2F1/sites/trial%3F1');
    expect(api.requests[0]!.headers.origin).toBe('https://study.example.org');
    expect(api.requests[0]!.headers.authorization).toBeUndefined();
    expect(out.records).toEqual([site]);
    expect(out.bodyText).toBe(JSON.stringify([site]));
  });

  it.each([401, 403])('%i → AuthError naming origin, microsite and trial', async (status) => {
    const { sites } = await setup((_req, res) => sendJson(res, status, {}));
    const err = (await rejection(sites.fetchSites('m1', 't1'))) as Error;
    expect(err).toBeInstanceOf(AuthError);
    expect(err.message).toContain('the site list refused origin https://study.example.org for microsite m1 / trial t1');
  });

  it('404 → ConfigError', async () => {
    const { sites } = await setup((_req, res) => sendJson(res, 404, {}));
    await expect(sites.fetchSites('m1', 't1')).rejects.toBeInstanceOf(ConfigError);
  });

  it('5xx → retried then UpstreamUnavailableError', async () => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 502, {}), 3);
    await expect(sites.fetchSites('m1', 't1')).rejects.toBeInstanceOf(UpstreamUnavailableError);
    expect(api.requests).toHaveLength(3);
  });

  it.each([
    ['not an array', { sites: [] }],
    ['record without siteId', [{ displayName: 'x' }]],
    ['latitude as string', [{ siteId: 'a', latitude: '1.0' }]],
  ])('%s → UpstreamContractError', async (_n, body) => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, body));
    await expect(sites.fetchSites('m1', 't1')).rejects.toBeInstanceOf(UpstreamContractError);
    expect(api.requests).toHaveLength(1);
  });

  it('nulls are accepted where the warehouse keeps NULL', async () => {
    const { sites } = await setup((_req, res) => sendJson(res, 200, [{ siteId: 'a', latitude: null, city: null }]));
    expect((await sites.fetchSites('m', 't')).records[0]!.latitude).toBeNull();
  });
});

describe('site list path: a configured id is always one path segment', () => {
  it.each([
    ['../../rpi/events', '/microsites-api/v1/..%2F..%2Frpi%2Fevents/sites/t1'],
    ['a/b', '/microsites-api/v1/a%2Fb/sites/t1'],
    ['x?y#z', '/microsites-api/v1/x%3Fy%23z/sites/t1'],
    ['%2F', '/microsites-api/v1/%252F/sites/t1'],
    ['a..b', '/microsites-api/v1/a..b/sites/t1'],
    ['...', '/microsites-api/v1/.../sites/t1'],
  ])('microsite id %j → request path %s', async (id, path) => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, []));
    await sites.fetchSites(id, 't1');
    expect(api.requests[0]!.url).toBe(path);
  });

  it('a trial id that tries to climb stays one segment too', async () => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, []));
    await sites.fetchSites('m1', '../../rpi/events');
    expect(api.requests[0]!.url).toBe('/microsites-api/v1/m1/sites/..%2F..%2Frpi%2Fevents');
  });

  it.each([
    ['.', 'm1'],
    ['..', 'm1'],
    ['m1', '.'],
    ['m1', '..'],
    ['', 'm1'],
  ])('ids %j / %j cannot be a segment (the URL standard resolves . and .. even as %%2E): ConfigError, no request', async (m, t) => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, []));
    const err = await rejection(sites.fetchSites(m, t));
    expect(err).toBeInstanceOf(ConfigError);
    expect(api.requests).toHaveLength(0);
  });
});

describe('site records that are not well-formed Unicode', () => {
  it.each([
    ['a lone high surrogate in a value', '[{"siteId":"s-1"},{"siteId":"s-2","city":"CANARY\\ud800"}]', 2],
    ['a lone low surrogate deep inside', '[{"siteId":"s-1","extra":{"a":[{"b":"CANARY\\udc00x"}]}}]', 1],
    ['a lone surrogate in a key', '[{"siteId":"s-1"},{"siteId":"s-2"},{"siteId":"s-3","CANARY\\ud83d":1}]', 3],
  ])('%s → UpstreamContractError naming microsite, trial and record, never the value', async (_n, body, index) => {
    const { api, sites } = await setup((_req, res) => sendJson(res, 200, body));
    const err = await rejection(sites.fetchSites('m1', 't1'));
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as UpstreamContractError).exitCode).toBe(6);
    expect(err.message).toContain(`site list of microsite m1 / trial t1: record ${index} holds a string that is not well-formed Unicode`);
    expect(err.message).not.toContain('CANARY');
    expect(api.requests).toHaveLength(1);
  });

  it('a well-formed surrogate pair (an emoji) is fine', async () => {
    const { sites } = await setup((_req, res) => sendJson(res, 200, '[{"siteId":"s-1","city":"\\ud83d\\ude00"}]'));
    expect((await sites.fetchSites('m1', 't1')).records[0]!.city).toBe('😀');
  });
});
