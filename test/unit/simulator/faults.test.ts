import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { decodeCursor, encodeCursor } from '../../../src/simulator/cursor.js';
import { FaultRegistry, parseFaultSpec } from '../../../src/simulator/faults.js';

describe('parseFaultSpec', () => {
  it('parses the main value, keys and infinity', () => {
    expect(parseFaultSpec('events:status=503:times=3')).toEqual({ endpoint: 'events', kind: 'status', code: 503, times: 3 });
    expect(parseFaultSpec('events:status=429:retryAfter=2')).toEqual({ endpoint: 'events', kind: 'status', code: 429, retryAfter: 2 });
    expect(parseFaultSpec('events:status:code=503:retryAfter=Wed, 21 Oct 2026 07:28:00 GMT')).toEqual({
      endpoint: 'events',
      kind: 'status',
      code: 503,
      retryAfter: 'Wed, 21 Oct 2026 07:28:00 GMT',
    });
    expect(parseFaultSpec('events:latency=1500:after=2:times=inf')).toEqual({ endpoint: 'events', kind: 'latency', ms: 1500, after: 2, times: Infinity });
    expect(parseFaultSpec('events:truncated:at=40:chunked=true')).toEqual({ endpoint: 'events', kind: 'truncated', at: 40, chunked: true });
    expect(parseFaultSpec('token:tokenLifetime=2')).toEqual({ endpoint: 'token', kind: 'tokenLifetime', seconds: 2 });
  });

  it('keeps colons inside URL values', () => {
    expect(parseFaultSpec('events:nextPage=otherOrigin:url=http://127.0.0.1:9999/x?a=b:times=2')).toEqual({
      endpoint: 'events',
      kind: 'nextPage',
      variant: 'otherOrigin',
      url: 'http://127.0.0.1:9999/x?a=b',
      times: 2,
    });
    expect(parseFaultSpec('events:redirect=http://127.0.0.1:1234/trap')).toEqual({ endpoint: 'events', kind: 'redirect', url: 'http://127.0.0.1:1234/trap' });
  });

  it('refuses bad specs with a ConfigError', () => {
    expect(() => parseFaultSpec('nowhere:status=503')).toThrow(ConfigError);
    expect(() => parseFaultSpec('events:explode')).toThrow(ConfigError);
    expect(() => parseFaultSpec('events:status=abc')).toThrow(ConfigError);
    expect(() => parseFaultSpec('events')).toThrow(ConfigError);
    expect(() => parseFaultSpec('events:always401=3')).toThrow(ConfigError);
  });
});

describe('FaultRegistry', () => {
  const make = () => {
    const calls: string[] = [];
    const reg = new FaultRegistry({ revokeTokens: () => calls.push('revoke'), setTokenLifetime: (s) => calls.push(`life:${s}`), now: () => 0 });
    return { reg, calls };
  };

  it('validates rules', () => {
    const { reg } = make();
    expect(() => reg.add({ endpoint: 'events', kind: 'status' })).toThrow(ConfigError);
    expect(() => reg.add({ endpoint: 'token', kind: 'missingPagination' })).toThrow(ConfigError);
    expect(() => reg.add({ endpoint: 'events', kind: 'nextPage', variant: 'sideways' as never })).toThrow(ConfigError);
    expect(reg.pending()).toEqual([]);
  });

  it('lets `after` requests pass, fires `times` times, then disappears', () => {
    const { reg } = make();
    reg.add({ endpoint: 'events', kind: 'status', code: 503, after: 1, times: 2 });
    expect(reg.take('events', 'transport', '/rpi/events')).toBeUndefined();
    expect(reg.take('token', 'transport', '/oauth/token')).toBeUndefined();
    expect(reg.take('events', 'transport', '/rpi/events')?.code).toBe(503);
    expect(reg.take('events', 'transport', '/rpi/events')?.code).toBe(503);
    expect(reg.take('events', 'transport', '/rpi/events')).toBeUndefined();
    expect(reg.pending()).toEqual([]);
    expect(reg.fired().map((f) => f.kind)).toEqual(['status', 'status']);
  });

  it('keeps phases apart and counts content faults only where they apply', () => {
    const { reg } = make();
    reg.add({ endpoint: 'events', kind: 'eventWithoutId' });
    expect(reg.take('events', 'transport', '/rpi/events')).toBeUndefined();
    expect(reg.take('events', 'content', '/rpi/events', () => false)).toBeUndefined();
    expect(reg.pending()[0]!.seen).toBe(0);
    expect(reg.take('events', 'content', '/rpi/events')?.kind).toBe('eventWithoutId');
  });

  it('applies tokenLifetime at once and always401 forever by default', () => {
    const { reg, calls } = make();
    reg.add({ endpoint: 'token', kind: 'tokenLifetime', seconds: 2 });
    expect(calls).toEqual(['life:2']);
    reg.add({ endpoint: 'events', kind: 'always401' });
    for (let i = 0; i < 5; i++) expect(reg.take('events', 'auth', '/rpi/events')?.kind).toBe('always401');
    expect(reg.pending()[0]!.remaining).toBe(Infinity);
    reg.clear();
    expect(reg.take('events', 'auth', '/rpi/events')).toBeUndefined();
  });
});

describe('cursor', () => {
  it('round-trips and rejects garbage', () => {
    const c = { eventTypes: ['v1.patient.created'], trialIds: ['TRIAL-001'], after: 12, afterId: 'abc', limit: 7 };
    expect(decodeCursor(encodeCursor(c))).toEqual(c);
    expect(decodeCursor('')).toBeUndefined();
    expect(decodeCursor('!!!')).toBeUndefined();
    expect(decodeCursor(Buffer.from('{"v":1}').toString('base64url'))).toBeUndefined();
    expect(decodeCursor(encodeCursor({ ...c, after: 0 }))).toBeUndefined();
  });
});
