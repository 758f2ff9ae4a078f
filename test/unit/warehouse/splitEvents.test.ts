import { describe, expect, it } from 'vitest';
import { emptyColumns, splitEvents } from '../../../src/warehouse/splitEvents.js';

function split(body: string) {
  const cols = emptyColumns();
  const n = splitEvents(body, cols);
  return { n, cols };
}

describe('splitEvents', () => {
  it('slices each event exactly as sent, with its id, type, time and message', () => {
    const events = [
      { id: 'a', eventType: 'v1.patient.created', publishedTime: '2026-01-05T08:00:00.123Z', message: { x: '}{][,"', n: [1, { y: 2 }] } },
      { name: 'v1.contactAttempt.created', id: 'b\\"q', publishedTime: null, message: null, unknown: { eventType: 'nested-not-top-level' } },
      { id: 'c', eventType: null, name: 'fallback', message: 'text' },
      { id: 'd\u00e9\u2028', eventType: 'v2.patient.created', publishedTime: 12345 },
    ];
    const body = JSON.stringify({ pagination: { nextPage: 'http://h/?a=[1]', hasNextPage: false }, events, extra: '"events":[' });
    const { n, cols } = split(body);
    expect(n).toBe(4);
    expect(cols.envelope.map((e) => JSON.parse(e))).toEqual(events);
    expect(cols.id).toEqual(['a', 'b\\"q', 'c', 'd\u00e9\u2028']);
    expect(cols.type).toEqual(['v1.patient.created', 'v1.contactAttempt.created', 'fallback', 'v2.patient.created']);
    expect(cols.publishedTime).toEqual(['2026-01-05T08:00:00.123Z', null, null, '12345']);
    expect(cols.message.map((m) => (m === null ? null : JSON.parse(m)))).toEqual([events[0]!.message, null, 'text', null]);
  });

  it('keeps the bytes of pretty-printed bodies and handles an empty page', () => {
    const events = [{ id: 'a', eventType: 't', message: { k: 1 } }];
    const { cols } = split(JSON.stringify({ events, pagination: {} }, null, 2));
    expect(JSON.parse(cols.envelope[0]!)).toEqual(events[0]);
    expect(cols.envelope[0]).toContain('\n');
    expect(split('{"events": [ ], "pagination": {}}').n).toBe(0);
  });

  it('refuses bodies that are not an object with an events array of objects', () => {
    expect(() => split('[]')).toThrow(SyntaxError);
    expect(() => split('{"pagination":{}}')).toThrow(/no "events" array/);
    expect(() => split('{"events":{}}')).toThrow(/not an array/);
    expect(() => split('{"events":[1,2]}')).toThrow(/not a JSON object/);
    expect(() => split('{"events":[{"id":"a"')).toThrow(SyntaxError);
  });
});
