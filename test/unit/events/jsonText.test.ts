import { describe, expect, it } from 'vitest';
import { jsonText } from '../../../src/events/jsonText.js';
import { sameJson } from '../../../src/extract/sameJson.js';
import { quarantinedForm } from '../../../src/extract/quarantine.js';

const SAMPLES = [
  '{"a":1,"b":[true,false,null,"x",{"c":-0,"d":1e400,"e":0.1}],"":{},"f":[]}',
  '{"__proto__":{"x":1},"constructor":"c","é\\u2028":"\\ud83d\\ude00","\\u0000":"\\n\\"\\\\"}',
  '[[],[[]],{"a":{"b":{"c":[1,2,3]}}},"\\ud800",12345678901234567890]',
  '"just a string"',
  '3.14',
  'null',
];
const deep = (depth: number, inner: string) => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);

describe('jsonText: JSON text of a parsed value without recursion', () => {
  it('writes what JSON.stringify writes', () => {
    for (const text of SAMPLES) expect(jsonText(JSON.parse(text))).toBe(JSON.stringify(JSON.parse(text)));
  });

  it('sorts members when asked, at every level, and makes strings and names well-formed when asked', () => {
    expect(jsonText(JSON.parse('{"b":{"z":1,"y":[{"d":1,"c":2}]},"a":0}'), { sortKeys: true })).toBe(
      '{"a":0,"b":{"y":[{"c":2,"d":1}],"z":1}}',
    );
    expect(jsonText(JSON.parse('{"\\udc00k":["x\\ud800"]}'), { wellFormed: true })).toBe('{"\uFFFDk":["x\uFFFD"]}');
  });

  it('a value nested 200,000 deep (JSON.stringify and a recursive walk run out of stack)', () => {
    const value = JSON.parse(deep(200_000, '"\\ud800"')) as unknown;
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    const text = jsonText(value, { wellFormed: true });
    expect(text).toBe(deep(200_000, '"\uFFFD"'));
  });
});

describe('what uses it: redeliveries and the quarantined form at any depth (a RangeError stopped the stream for good before)', () => {
  it('sameJson compares deep values, member order free', () => {
    expect(sameJson(deep(50_000, '{"x":1,"y":2}'), deep(50_000, '{ "y": 2, "x": 1 }'))).toBe(true);
    expect(sameJson(deep(50_000, '{"x":1}'), deep(50_000, '{"x":2}'))).toBe(false);
  });

  it('quarantinedForm repairs a deep event', () => {
    const envelope = `{"id":"e1","eventType":"t","message":${deep(50_000, '"\\ud800"')}}`;
    const q = quarantinedForm(envelope, 'e1', 't', 'repaired');
    expect(q.message).toBe(deep(50_000, '"\uFFFD"'));
    expect(q.envelope).toBe(`{"id":"e1","eventType":"t","message":${q.message}}`);
  });
});
