import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { cursorProblem, firstPageUrl } from '../../../src/upstream/events.js';
import { parseRetryAfter } from '../../../src/upstream/http.js';

describe('firstPageUrl', () => {
  it('repeats eventTypes then trialIds, encodes values, appends limit', () => {
    const url = firstPageUrl('https://api.example.org', {
      eventTypes: ['v1.patient.created', 'v1.contactAttempt.created'],
      trialIds: ['T 1', 'a&b=c/d'],
      limit: 500,
    });
    expect(url).toBe(
      'https://api.example.org/rpi/events?eventTypes=v1.patient.created&eventTypes=v1.contactAttempt.created&trialIds=T%201&trialIds=a%26b%3Dc%2Fd&limit=500',
    );
    const parsed = new URL(url);
    expect(parsed.searchParams.getAll('trialIds')).toEqual(['T 1', 'a&b=c/d']);
  });

  it('keeps a base path prefix and omits limit when not set', () => {
    expect(firstPageUrl('https://api.example.org/v/', { eventTypes: ['x'], trialIds: ['t'] })).toBe(
      'https://api.example.org/v/rpi/events?eventTypes=x&trialIds=t',
    );
  });

  it.each([
    [{ eventTypes: [], trialIds: ['t'] }],
    [{ eventTypes: ['x'], trialIds: [] }],
    [{ eventTypes: ['x'], trialIds: ['t'], limit: 0 }],
    [{ eventTypes: ['x'], trialIds: ['t'], limit: 1.5 }],
  ])('refuses a bad filter with ConfigError', (filter) => {
    expect(() => firstPageUrl('https://api.example.org', filter)).toThrow(ConfigError);
  });

  it.each(['not a url', 'ftp://x.org', 'https://u:p@x.org', 'https://x.org/?a=1'])('refuses base URL %s', (base) => {
    expect(() => firstPageUrl(base, { eventTypes: ['x'], trialIds: ['t'] })).toThrow(ConfigError);
  });
});

describe('cursorProblem', () => {
  const origin = 'https://api.example.org';
  it.each([
    ['https://api.example.org/rpi/events?c=1', undefined],
    ['https://API.example.org:443/other/path?c=1', undefined],
    ['http://api.example.org/rpi/events', 'is on origin'],
    ['https://api.example.org:8443/rpi/events', 'is on origin'],
    ['https://evil.example.org/rpi/events', 'is on origin'],
    ['https://user:pw@api.example.org/rpi/events', 'user info'],
    ['/rpi/events?c=2', 'not an absolute URL'],
    ['javascript:alert(1)', 'is on origin javascript:'],
  ])('%s', (url, expected) => {
    const problem = cursorProblem(url, origin);
    if (expected === undefined) expect(problem).toBeUndefined();
    else expect(problem).toContain(expected);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2030, 0, 1);
  it.each([
    ['0', 0],
    ['7', 7000],
    [' 120 ', 120_000],
    [new Date(now + 5000).toUTCString(), 5000],
    [new Date(now - 5000).toUTCString(), 0],
    ['soon', undefined],
    ['', undefined],
    ['-3', undefined],
  ])('%s → %s', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
