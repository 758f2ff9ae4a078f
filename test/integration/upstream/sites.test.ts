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
  cleanups.push(() => api.close(), () => http.close());
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
