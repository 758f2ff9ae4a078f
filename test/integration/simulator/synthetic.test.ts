import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVENT_TYPES, expectedEvents, startMockApi, type MockApi } from '../../../packages/mock-api/src/index.js';
import { eventsUrl, getToken, readAll } from './helpers.js';

describe('mock API: synthetic data set (benchmarks)', () => {
  let api: MockApi;
  let token: string;
  const N = 200_000;
  beforeAll(async () => {
    api = await startMockApi({ syntheticEvents: N, releaseFraction: 0.9 });
    token = await getToken(api);
  });
  afterAll(async () => api.close());

  it('generates exactly N valid events of the default types with realistic sizes', () => {
    const events = api.truth.events;
    expect(events.length).toBe(N);
    expect(api.truth.visibleCount()).toBe(N * 0.9);
    const types = new Set(events.map((e) => e.eventType));
    expect([...types].every((t) => DEFAULT_EVENT_TYPES.includes(t))).toBe(true);
    expect(types.size).toBe(4);
    const sample = events.slice(0, 2000).map((e) => JSON.stringify(e.envelope).length);
    const avg = sample.reduce((a, b) => a + b, 0) / sample.length;
    expect(avg).toBeGreaterThan(300);
    expect(avg).toBeLessThan(450);
    for (const e of events.slice(0, 100)) expect(e.publishedTime).toBe(new Date(Date.parse(e.publishedTime)).toISOString());
    expect(new Set(events.slice(0, 50_000).map((e) => e.id)).size).toBe(50_000);
  });

  it('serves 1000-event pages exactly', async () => {
    const filter = { trialIds: api.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES };
    const { events, pages } = await readAll(eventsUrl(api, { ...filter, limit: 1000 }), token);
    expect(pages.length).toBe(Math.ceil((N * 0.9) / 1000));
    const expected = expectedEvents(api.truth, filter);
    expect(events.length).toBe(expected.length);
    expect(events[events.length - 1]!['id']).toBe(expected[expected.length - 1]!.id);
    expect(events.map((e) => e['id'])).toEqual(expected.map((e) => e.id));
  });

  it('is deterministic across starts', async () => {
    const again = await startMockApi({ syntheticEvents: 2000 });
    const other = await startMockApi({ syntheticEvents: 2000 });
    try {
      expect(JSON.stringify(again.truth.events)).toBe(JSON.stringify(other.truth.events));
    } finally {
      await again.close();
      await other.close();
    }
  });
});

describe('mock API: determinism and growth timer', () => {
  it('same options serve byte-identical pages', async () => {
    const a = await startMockApi({ seed: 11, patientsPerTrial: 30 });
    const b = await startMockApi({ seed: 11, patientsPerTrial: 30 });
    try {
      const filter = { trialIds: a.truth.trialIds, eventTypes: DEFAULT_EVENT_TYPES, limit: 1000 };
      const ra = await fetch(eventsUrl(a, filter), { headers: { authorization: `Bearer ${await getToken(a)}` } });
      const rb = await fetch(eventsUrl(b, filter), { headers: { authorization: `Bearer ${await getToken(b)}` } });
      const ta = (await ra.text()).replaceAll(a.baseUrl, '');
      const tb = (await rb.text()).replaceAll(b.baseUrl, '');
      expect(ta.length).toBeGreaterThan(10_000);
      expect(ta).toBe(tb);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('growEvery releases events while running', async () => {
    const api = await startMockApi({ patientsPerTrial: 30, releaseFraction: 0, growEvery: { intervalMs: 20, events: 5 } });
    try {
      expect(api.truth.visibleCount()).toBe(0);
      await new Promise((r) => setTimeout(r, 130));
      expect(api.truth.visibleCount()).toBeGreaterThanOrEqual(10);
      expect(api.truth.visibleCount() % 5).toBe(0);
      const remaining = api.truth.events.length - api.truth.visibleCount();
      expect(remaining).toBeGreaterThan(0);
      expect(api.grow()).toBe(remaining);
      expect(api.truth.visibleCount()).toBe(api.truth.events.length);
      expect(api.grow(10)).toBe(0);
    } finally {
      await api.close();
    }
  });

  it('invalid options are a ConfigError', async () => {
    await expect(startMockApi({ releaseFraction: 2 })).rejects.toMatchObject({ code: 'E_CONFIG' });
    await expect(startMockApi({ trials: 0 })).rejects.toMatchObject({ code: 'E_CONFIG' });
  });
});
