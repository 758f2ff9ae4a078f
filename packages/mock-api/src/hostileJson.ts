/**
 * Byte-level rewrites of served JSON for the simulator's hostile-encoding faults
 * (faults.ts: `loneSurrogate`, `escapedKeys`, `duplicateIdKey`, `reorderedRedelivery`,
 * `padEvents`). Every function takes an envelope's JSON text as the store renders it (one
 * `JSON.stringify` of an object) and returns other bytes; re-serialising parsed values
 * with `JSON.stringify` gives back the same bytes, so untouched members stay byte-identical.
 *
 * @module
 */

/** `x`, a lone high surrogate (U+D800), `y`: `JSON.stringify` writes it as `"x\ud800y"` (escape text: valid JSON, not valid Unicode). */
export const LONE_SURROGATE = 'x\ud800y';

/** An envelope split right before the closing `}` of its `message` object. */
export interface MessageSplit {
  /** Everything up to, not including, the message's closing brace. */
  head: string;
  /** The message's closing brace and everything after it. */
  tail: string;
  /** True when the message has no member left (a new member needs no leading comma). */
  empty: boolean;
}

const parseObject = (json: string): Record<string, unknown> => {
  const v: unknown = JSON.parse(json);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('hostileJson: not a JSON object');
  return v as Record<string, unknown>;
};

/**
 * Splits an envelope where a member can be appended to its message. A member named
 * `drop` is removed from the message first, so that the appended one is the last and only
 * one of that name. An envelope whose `message` is not an object is split at its own end.
 *
 * @param envelopeJson one envelope's JSON text
 * @throws SyntaxError / Error when the text is not a JSON object
 */
export function splitAtMessageEnd(envelopeJson: string, drop?: string): MessageSplit {
  const env = parseObject(envelopeJson);
  const msg = env['message'];
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
    return { head: envelopeJson.slice(0, -1), tail: '}', empty: Object.keys(env).length === 0 };
  }
  const m = { ...(msg as Record<string, unknown>) };
  if (drop !== undefined) delete m[drop];
  let head = '{';
  let tail = '';
  let inTail = false;
  let first = true;
  for (const [k, v] of Object.entries(env)) {
    const member = `${first ? '' : ','}${JSON.stringify(k)}:`;
    first = false;
    if (k === 'message') {
      const text = JSON.stringify(m);
      head += member + text.slice(0, -1);
      tail = '}';
      inTail = true;
    } else if (inTail) tail += member + JSON.stringify(v);
    else head += member + JSON.stringify(v);
  }
  return { head, tail: `${tail}}`, empty: Object.keys(m).length === 0 };
}

/** The envelope with `"note":"x\ud800y"` (escape text) as its message's last member. */
export function withLoneSurrogateNote(envelopeJson: string): string {
  const s = splitAtMessageEnd(envelopeJson, 'note');
  return `${s.head}${s.empty ? '' : ','}"note":${JSON.stringify(LONE_SURROGATE)}${s.tail}`;
}

/** The envelope with its `id` and `eventType` keys spelt `"\u0069d"` and `"\u0065ventType"`; values and order unchanged. */
export function withEscapedKeys(envelopeJson: string): string {
  const env = parseObject(envelopeJson);
  const key = (k: string): string => (k === 'id' ? '"\\u0069d"' : k === 'eventType' ? '"\\u0065ventType"' : JSON.stringify(k));
  return `{${Object.entries(env)
    .map(([k, v]) => `${key(k)}:${JSON.stringify(v)}`)
    .join(',')}}`;
}

/** The envelope with a second `"id"` member, `"<id>-dup"`, as its last member. */
export function withDuplicateIdKey(envelopeJson: string): string {
  const env = parseObject(envelopeJson);
  return `${envelopeJson.slice(0, -1)},"id":${JSON.stringify(`${String(env['id'])}-dup`)}}`;
}

/**
 * Serialises a JSON value with the keys of every object in reverse order and extra
 * whitespace (`{ "b" : 2 ,\n "a" : 1 }`): `JSON.parse` of the result deep-equals `value`.
 */
export function reorderedJson(value: unknown): string {
  if (Array.isArray(value)) return value.length === 0 ? '[ ]' : `[ ${value.map(reorderedJson).join(' ,\n ')} ]`;
  if (typeof value === 'object' && value !== null) {
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o).reverse();
    return keys.length === 0 ? '{ }' : `{ ${keys.map((k) => `${JSON.stringify(k)} : ${reorderedJson(o[k])}`).join(' ,\n ')} }`;
  }
  return JSON.stringify(value);
}
