import { describe, expect, it } from 'vitest';
import { UpstreamContractError } from '../../../src/errors.js';
import { MAX_PAGE_EVENTS, readEventsPage } from '../../../src/upstream/page.js';

const page = (events: string, pagination = '{"nextPage":"n","hasNextPage":false}') => `{"events":[${events}],"pagination":${pagination}}`;

describe('readEventsPage: one reading of a page (docs/ingest.md "How a page is read")', () => {
  it('slices each event exactly as sent and reads the fields the job uses', () => {
    const e1 =
      '{ "id" : "a", "name": "v1.patient.contactAttempt.created", "publishedTime": "x", "message": {"k": [1, "]}"]}, "newField": {"a": 1} }';
    const e2 = '{"id":"b","eventType":"v2.patient.created","message":null,"__proto__":{"polluted":true}}';
    const r = readEventsPage(
      `{"z": 3, "events": [${e1}, ${e2}], "pagination": {"nextPage": "http://h/n?c=\\u0031", "hasNextPage": true, "y": 2}}`,
    );
    expect(r.events.all(r.events.envelope)).toEqual([e1, e2]);
    expect(r.events.all(r.events.id)).toEqual(['a', 'b']);
    expect(r.events.all(r.events.type)).toEqual(['v1.patient.contactAttempt.created', 'v2.patient.created']);
    expect(r.events.all(r.events.publishedTime)).toEqual(['x', null]);
    expect(r.events.all(r.events.message)).toEqual(['{"k": [1, "]}"]}', null]);
    expect(r.nextPage).toBe('http://h/n?c=1');
    expect(r.hasNextPage).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('escaped member names are the names they spell: "\\u0065vents", "\\u0069d" (exit 1 / exit 6 before)', () => {
    const r = readEventsPage(
      '{"\\u0065vents":[{"\\u0069d":"e\\u0031","\\u0065ventType":"t"}],"\\u0070agination":{"nextPage":"n","hasNextPage":false}}',
    );
    expect(r.events.all(r.events.id)).toEqual(['e1']);
    expect(r.events.all(r.events.type)).toEqual(['t']);
    expect(r.events.all(r.events.envelope)).toEqual(['{"\\u0069d":"e\\u0031","\\u0065ventType":"t"}']);
  });

  it.each([
    [
      'two "events" keys (JSON.parse kept the last, the old splitter stored the first)',
      `{"events":[{"id":"a"}],"events":[],"pagination":{"nextPage":"n","hasNextPage":false}}`,
      'the page has the member "events" more than once',
    ],
    [
      'an escaped second "events" key',
      `{"events":[{"id":"a"}],"\\u0065vents":[],"pagination":{"nextPage":"n","hasNextPage":false}}`,
      'the page has the member "events" more than once',
    ],
    [
      'two "id" keys in one event (event_id and envelope id disagreed)',
      page('{"id":"a","id":"b"}'),
      'event 1 has the member "id" more than once',
    ],
    ['"id" and an escaped "id"', page('{"id":"a"},{"id":"b","\\u0069d":"c"}'), 'event 2 has the member "id" more than once'],
    ['two "message" keys', page('{"id":"a","message":{},"message":{"x":1}}'), 'event 1 has the member "message" more than once'],
    [
      'two "nextPage" keys',
      page('', '{"nextPage":"a","nextPage":"b","hasNextPage":false}'),
      'pagination has the member "nextPage" more than once',
    ],
  ])('%s breaks the contract', (_what, body, message) => {
    expect(() => readEventsPage(body)).toThrow(UpstreamContractError);
    expect(() => readEventsPage(body)).toThrow(message);
  });

  it.each([
    ['[1,2]', '(root): not an object'],
    ['{"events":[{"id":"a"}]}', 'pagination: missing'],
    ['{"pagination":{"nextPage":"n","hasNextPage":false}}', 'events: missing'],
    ['{"events":{},"pagination":{"nextPage":"n","hasNextPage":false}}', 'events: not an array'],
    [page('{"id":7}'), 'event 1 has no string id'],
    [page('{"id":""}'), 'event 1 has no string id'],
    [page('{"id":"\\ud800"}'), 'event 1 has an id that is empty or not valid Unicode'],
    [page('null'), 'event 1 is not an object'],
    [page('[]'), 'event 1 is not an object'],
    [page('{"id":"a","eventType":5}'), 'event 1 has a non-string eventType'],
    [page('', '{"nextPage":5,"hasNextPage":false}'), 'pagination.nextPage: not a string'],
    [page('', '{"nextPage":"\\udc00","hasNextPage":false}'), 'pagination.nextPage: not valid Unicode'],
    [page('', '{"nextPage":"n","hasNextPage":"yes"}'), 'pagination.hasNextPage: not a boolean'],
  ])('contract break %s', (body, message) => {
    expect(() => readEventsPage(body)).toThrow(message);
  });

  it('a lone surrogate inside a message is read as sent (the writer quarantines it), and never quoted in an error', () => {
    const r = readEventsPage(page('{"id":"a","eventType":"t","message":{"note":"x\\ud800y","referralSubjectId":"SUBJ-1"}}'));
    expect(r.events.all(r.events.message)).toEqual(['{"note":"x\\ud800y","referralSubjectId":"SUBJ-1"}']);
    try {
      readEventsPage(page('{"id":"a","id":"SUBJ-CANARY"}'));
    } catch (err) {
      expect((err as Error).message).not.toContain('SUBJ-CANARY');
    }
  });

  it('slices events with tricky strings, nulls and a pretty-printed body exactly as sent', () => {
    const events = [
      { id: 'a', eventType: 'v1.patient.created', publishedTime: '2026-01-05T08:00:00.123Z', message: { x: '}{][,"', n: [1, { y: 2 }] } },
      {
        name: 'v1.contactAttempt.created',
        id: 'b\\"q',
        publishedTime: null,
        message: null,
        unknown: { eventType: 'nested-not-top-level' },
      },
      { id: 'c', eventType: null, name: 'fallback', message: 'text' },
      { id: 'd\u00e9\u2028', eventType: 'v2.patient.created', publishedTime: 12345 },
    ];
    const body = JSON.stringify({ pagination: { nextPage: 'http://h/?a=[1]', hasNextPage: false }, events, extra: '"events":[' }, null, 2);
    const { events: cols } = readEventsPage(body);
    expect(cols.all(cols.envelope).map((e) => JSON.parse(e))).toEqual(events);
    expect(cols.envelope(0)).toContain('\n');
    expect(cols.all(cols.id)).toEqual(['a', 'b\\"q', 'c', 'd\u00e9\u2028']);
    expect(cols.all(cols.type)).toEqual(['v1.patient.created', 'v1.contactAttempt.created', 'fallback', 'v2.patient.created']);
    expect(cols.all(cols.publishedTime)).toEqual(['2026-01-05T08:00:00.123Z', null, null, '12345']);
    expect(cols.all(cols.message).map((m) => (m === null ? null : JSON.parse(m)))).toEqual([events[0]!.message, null, 'text', null]);
    expect(readEventsPage('{"events": [ ], "pagination": {"nextPage": "n", "hasNextPage": false}}').events.count).toBe(0);
  });

  it('offsets are bytes of the body as received: characters outside ASCII, a surrogate pair, a byte order mark the decoder removed', () => {
    const events = [
      '{"id":"é1","eventType":"v1.patient.created","message":{"n":"naïve € 😀 日本"}}',
      '{"id":"b","publishedTime":"2026-01-05T08:00:00Z","message":{"emoji":"😀😀"},"x":"ü"}',
    ];
    const body = `{"before":"😀 €","events":[${events.join(', ')}],"pagination":{"nextPage":"n","hasNextPage":false}}`;
    for (const bytes of [Buffer.from(body, 'utf8'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body, 'utf8')])]) {
      const { events: cols } = readEventsPage(body, bytes);
      expect(cols.all(cols.envelope)).toEqual(events);
      expect(cols.all(cols.id)).toEqual(['é1', 'b']);
      expect(cols.all(cols.message)).toEqual(['{"n":"naïve € 😀 日本"}', '{"emoji":"😀😀"}']);
      expect(cols.all(cols.publishedTime)).toEqual([null, '2026-01-05T08:00:00Z']);
    }
  });

  it('the cursor is a string of its own, not a slice that keeps the page body alive', () => {
    const r = readEventsPage(page('{"id":"a"}', '{"nextPage":"http://h/rpi/events?cursor=abcdefghijklmnopqrstuvwxyz","hasNextPage":true}'));
    expect(r.nextPage).toBe('http://h/rpi/events?cursor=abcdefghijklmnopqrstuvwxyz');
  });
});

describe('a page of tiny events within --max-page-bytes (40 bytes of offsets an event: a 100 MB page of 10-byte events took 978 MiB)', () => {
  it(`a page of more than ${MAX_PAGE_EVENTS} events is refused (exit 6) while it is read, before its offsets grow further`, () => {
    const tiny = '{"id":"a"},'.repeat(MAX_PAGE_EVENTS);
    const err = (() => {
      try {
        readEventsPage(page(`${tiny}{"id":"b"}`));
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(UpstreamContractError);
    expect((err as Error).message).toContain(`more than ${MAX_PAGE_EVENTS} events`);
  });

  it(`a page of exactly ${MAX_PAGE_EVENTS} events is read, its offsets a view of one array (no copy at the end)`, () => {
    const r = readEventsPage(page(`${'{"id":"a"},'.repeat(MAX_PAGE_EVENTS - 1)}{"id":"b"}`));
    expect(r.events.count).toBe(MAX_PAGE_EVENTS);
    expect(r.events.id(MAX_PAGE_EVENTS - 1)).toBe('b');
    expect(r.events.offsets.buffer.byteLength).toBeLessThanOrEqual(r.events.offsets.byteLength * 1.5 + 4096);
  }, 30_000);
});
