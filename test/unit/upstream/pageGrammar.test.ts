/**
 * The page reader checks the grammar itself (docs/ingest.md "How a page is read"): a body is
 * unreadable exactly when `JSON.parse` refuses it. Compared on every small change of a few
 * pages: each character left out, replaced or added, and on the cases JSON readers differ on.
 */
import { describe, expect, it } from 'vitest';
import { JsonSyntaxError, readEventsPage } from '../../../src/upstream/page.js';

/** 'json' when JSON.parse accepts, else 'syntax'. */
function byJsonParse(body: string): 'json' | 'syntax' {
  try {
    JSON.parse(body);
    return 'json';
  } catch {
    return 'syntax';
  }
}

/** 'json' when the page reader finds the body JSON (a page, or a break of the contract), else 'syntax'. */
function byReader(body: string): 'json' | 'syntax' {
  try {
    readEventsPage(body);
    return 'json';
  } catch (err) {
    if (err instanceof JsonSyntaxError) return 'syntax';
    return 'json';
  }
}

const PAGES = [
  '{"events":[{"id":"a","eventType":"v1.patient.created","publishedTime":"2026-01-05T08:00:00.123Z","message":{"n":-1.5e+3,"b":[true,false,null],"s":"x\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9"}}],"pagination":{"nextPage":"http://h/n","hasNextPage":true}}',
  '{ "pagination" : { "hasNextPage" : false , "nextPage" : "n" } ,\n "events" : [ { "id" : "b" , "message" : [ 0 , 10 , 0.5 , 1E2 , -0 ] } , {"id":"c","x":{}} ] , "z" : [ ] }',
  '\t[ {"a": {"b": [[], {}, ""]}} ]\r\n',
];

const CHARS = [
  '"',
  '\\',
  ',',
  ':',
  '[',
  ']',
  '{',
  '}',
  ' ',
  '\t',
  '\n',
  '\r',
  '\u0000',
  '\u001f',
  '\u007f',
  '0',
  '1',
  '-',
  '+',
  '.',
  'e',
  'E',
  't',
  'n',
  'u',
  'x',
  'a',
  'é',
  '\u2028',
  '\ufeff',
];

describe('the page reader refuses exactly what JSON.parse refuses', () => {
  it.each(PAGES.map((p, i) => [i, p] as const))('page %i: every character left out, replaced and added', (_i, page) => {
    const differ: string[] = [];
    const check = (body: string): void => {
      const want = byJsonParse(body);
      if (byReader(body) !== want) differ.push(`${want}: ${JSON.stringify(body)}`);
    };
    check(page);
    for (let k = 0; k <= page.length; k += 1) {
      check(page.slice(0, k));
      check(page.slice(0, k) + page.slice(k + 1));
      for (const c of CHARS) {
        check(page.slice(0, k) + c + page.slice(k + 1));
        check(page.slice(0, k) + c + page.slice(k));
      }
    }
    expect(differ.slice(0, 10)).toEqual([]);
  });

  it.each([
    ['trailing comma in an array', '{"events":[{"id":"a"},],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['trailing comma in an object', '{"events":[{"id":"a","x":1,}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['NaN', '{"events":[{"id":"a","x":NaN}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['Infinity', '{"events":[{"id":"a","x":-Infinity}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a leading zero', '{"events":[{"id":"a","x":012}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a bare dot', '{"events":[{"id":"a","x":1.}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a comment', '{"events":[/* */],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['single quotes', "{'events':[],'pagination':{'nextPage':'n','hasNextPage':false}}"],
    ['a raw tab in a string', '{"events":[{"id":"a\tb"}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a raw NUL in a string', '{"events":[{"id":"a\u0000b"}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a bad escape', '{"events":[{"id":"a\\xb"}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a short unicode escape', '{"events":[{"id":"a\\u12"}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['two values', '{"events":[],"pagination":{"nextPage":"n","hasNextPage":false}} {}'],
    ['an empty body', ''],
    ['white space only', ' \n\t '],
    ['a non-breaking space between tokens', '{"events":\u00a0[],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['a member without a value', '{"events":[{"id":}],"pagination":{"nextPage":"n","hasNextPage":false}}'],
    ['an unclosed array deep inside', `{"events":[{"id":"a","x":${'['.repeat(50)}}],"pagination":{"nextPage":"n","hasNextPage":false}}`],
  ])('%s: unreadable, as for JSON.parse', (_what, body) => {
    expect(byJsonParse(body)).toBe('syntax');
    expect(() => readEventsPage(body)).toThrow(JsonSyntaxError);
  });

  it('accepts what JSON.parse accepts: nesting 100,000 deep, lone surrogate escapes, big numbers, U+2028', () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = `{"events":[{"id":"a","message":{"d":${deep},"s":"\\ud800","n":1e400,"m":-0.0e-0,"u":"\u2028"}}],"pagination":{"nextPage":"n","hasNextPage":false}}`;
    expect(byJsonParse(body)).toBe('json');
    expect(readEventsPage(body).events.count).toBe(1);
  });

  it('a grammar error anywhere wins over a break of the contract earlier in the body', () => {
    const body = '{"events":[{"id":7}],"pagination":{"nextPage":"n","hasNextPage":false},"x":tru}';
    expect(() => readEventsPage(body)).toThrow(JsonSyntaxError);
    expect(() => readEventsPage(body.replace('tru}', 'true}'))).toThrow('event 1 has no string id');
  });
});
