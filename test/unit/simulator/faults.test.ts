import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../packages/mock-api/src/errors.js';
import { decodeCursor, encodeCursor } from '../../../packages/mock-api/src/cursor.js';
import { FaultRegistry, parseFaultSpec, validateFaultRule, type FaultRule } from '../../../packages/mock-api/src/faults.js';
import {
  reorderedJson,
  splitAtMessageEnd,
  withDuplicateIdKey,
  withEscapedKeys,
  withLoneSurrogateNote,
} from '../../../packages/mock-api/src/hostileJson.js';
import { badToken } from '../../../packages/mock-api/src/tokenEndpoint.js';

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
    expect(parseFaultSpec('events:latency=1500:after=2:times=inf')).toEqual({
      endpoint: 'events',
      kind: 'latency',
      ms: 1500,
      after: 2,
      times: Infinity,
    });
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
    expect(parseFaultSpec('events:redirect=http://127.0.0.1:1234/trap')).toEqual({
      endpoint: 'events',
      kind: 'redirect',
      url: 'http://127.0.0.1:1234/trap',
    });
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
    const reg = new FaultRegistry({
      revokeTokens: () => calls.push('revoke'),
      setTokenLifetime: (s) => calls.push(`life:${s}`),
      now: () => 0,
    });
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

describe('hostile-input fault kinds: syntax and validation', () => {
  it('parses each new kind with its main value and keys', () => {
    expect(parseFaultSpec('events:loneSurrogate')).toEqual({ endpoint: 'events', kind: 'loneSurrogate' });
    expect(parseFaultSpec('events:loneSurrogate=3')).toEqual({ endpoint: 'events', kind: 'loneSurrogate', event: 3 });
    expect(parseFaultSpec('events:duplicateIdKey:event=2:times=4')).toEqual({
      endpoint: 'events',
      kind: 'duplicateIdKey',
      event: 2,
      times: 4,
    });
    expect(parseFaultSpec('events:duplicateEventsKey')).toEqual({ endpoint: 'events', kind: 'duplicateEventsKey' });
    expect(parseFaultSpec('events:escapedKeys:after=1')).toEqual({ endpoint: 'events', kind: 'escapedKeys', after: 1 });
    expect(parseFaultSpec('events:reorderedRedelivery')).toEqual({ endpoint: 'events', kind: 'reorderedRedelivery' });
    expect(parseFaultSpec('events:emptyPagesForever:times=5')).toEqual({ endpoint: 'events', kind: 'emptyPagesForever', times: 5 });
    expect(parseFaultSpec('events:nextPage=longCycle:length=4')).toEqual({
      endpoint: 'events',
      kind: 'nextPage',
      variant: 'longCycle',
      length: 4,
    });
    expect(parseFaultSpec('events:padEvents=20000000:times=30')).toEqual({
      endpoint: 'events',
      kind: 'padEvents',
      bytes: 20_000_000,
      times: 30,
    });
    expect(parseFaultSpec('events:padEvents:bytes=1000')).toEqual({ endpoint: 'events', kind: 'padEvents', bytes: 1000 });
    expect(parseFaultSpec('events:drip=250')).toEqual({ endpoint: 'events', kind: 'drip', ms: 250 });
    expect(parseFaultSpec('token:echoSecret')).toEqual({ endpoint: 'token', kind: 'echoSecret' });
    expect(parseFaultSpec('token:badToken=nonAscii')).toEqual({ endpoint: 'token', kind: 'badToken', variant: 'nonAscii' });
    expect(parseFaultSpec('sites:loneSurrogate')).toEqual({ endpoint: 'sites', kind: 'loneSurrogate' });
  });

  it('fills the defaults', () => {
    expect(validateFaultRule({ endpoint: 'events', kind: 'loneSurrogate' })).toEqual({
      endpoint: 'events',
      kind: 'loneSurrogate',
      event: 1,
      times: 1,
      after: 0,
    });
    expect(validateFaultRule({ endpoint: 'events', kind: 'duplicateIdKey' }).event).toBe(1);
    expect(validateFaultRule({ endpoint: 'events', kind: 'emptyPagesForever' }).times).toBe(Infinity);
    expect(validateFaultRule({ endpoint: 'events', kind: 'nextPage', variant: 'longCycle' }).length).toBe(3);
    expect(validateFaultRule({ endpoint: 'events', kind: 'drip' }).ms).toBe(5000);
    expect(validateFaultRule({ endpoint: 'sites', kind: 'loneSurrogate' })).toEqual({
      endpoint: 'sites',
      kind: 'loneSurrogate',
      times: 1,
      after: 0,
    });
  });

  it('refuses wrong endpoints and parameters', () => {
    const bad: FaultRule[] = [
      { endpoint: 'token', kind: 'loneSurrogate' },
      { endpoint: 'sites', kind: 'escapedKeys' },
      { endpoint: 'events', kind: 'echoSecret' },
      { endpoint: 'sites', kind: 'badToken', variant: 'crlf' },
      { endpoint: 'token', kind: 'badToken' },
      { endpoint: 'token', kind: 'badToken', variant: 'otherOrigin' },
      { endpoint: 'events', kind: 'nextPage', variant: 'crlf' },
      { endpoint: 'events', kind: 'nextPage', variant: 'longCycle', length: 1 },
      { endpoint: 'events', kind: 'padEvents' },
      { endpoint: 'events', kind: 'padEvents', bytes: 0 },
      { endpoint: 'events', kind: 'loneSurrogate', event: 0 },
      { endpoint: 'events', kind: 'drip', ms: 0 },
    ];
    for (const rule of bad) expect(() => validateFaultRule(rule), JSON.stringify(rule)).toThrow(ConfigError);
    expect(() => parseFaultSpec('events:echoSecret=1')).toThrow(ConfigError);
  });
});

describe('hostileJson', () => {
  const env = '{"id":"e1","publishedTime":"t","eventType":"v1.x","message":{"a":1,"b":[1,{"c":null}]},"traceId":"z"}';

  it("appends a lone-surrogate note as the message's last member", () => {
    expect(withLoneSurrogateNote(env)).toBe(
      '{"id":"e1","publishedTime":"t","eventType":"v1.x","message":{"a":1,"b":[1,{"c":null}],"note":"x\\ud800y"},"traceId":"z"}',
    );
    expect(withLoneSurrogateNote('{"id":"e1","message":{}}')).toBe('{"id":"e1","message":{"note":"x\\ud800y"}}');
  });

  it('splits at the message end, dropping a member of the given name', () => {
    expect(splitAtMessageEnd('{"id":"e1","message":{"pad":"old","a":1}}', 'pad')).toEqual({
      head: '{"id":"e1","message":{"a":1',
      tail: '}}',
      empty: false,
    });
  });

  it('escapes id and eventType keys only', () => {
    expect(withEscapedKeys(env)).toBe(
      '{"\\u0069d":"e1","publishedTime":"t","\\u0065ventType":"v1.x","message":{"a":1,"b":[1,{"c":null}]},"traceId":"z"}',
    );
    expect(JSON.parse(withEscapedKeys(env))).toEqual(JSON.parse(env));
  });

  it('duplicates the id key at the end', () => {
    expect(withDuplicateIdKey('{"id":"e1","message":{}}')).toBe('{"id":"e1","message":{},"id":"e1-dup"}');
  });

  it('re-serialises with reversed keys and extra whitespace', () => {
    expect(reorderedJson(JSON.parse(env))).toBe(
      '{ "traceId" : "z" ,\n "message" : { "b" : [ 1 ,\n { "c" : null } ] ,\n "a" : 1 } ,\n "eventType" : "v1.x" ,\n "publishedTime" : "t" ,\n "id" : "e1" }',
    );
    expect(reorderedJson({ e: {}, f: [] })).toBe('{ "f" : [ ] ,\n "e" : { } }');
  });
});

describe('badToken', () => {
  it('makes each malformed token', () => {
    expect(badToken('crlf')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\r\nX-Injected: 1$/);
    expect(badToken('nonAscii')).toMatch(/é$/);
    expect(badToken('tooLong').length).toBe(102_400);
  });
});
