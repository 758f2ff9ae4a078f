/**
 * JSON body parsing that never leaks a body into an error: `JSON.parse` messages quote the
 * text they choke on (docs/security.md), so they are replaced by a
 * description built from positions and sizes only.
 *
 * @module
 */
import { TransientBodyError, type HttpResponse } from './http.js';

/**
 * Parses a response body as JSON.
 *
 * @returns the parsed value (objects keep every key, `__proto__` included as an own key)
 * @throws {TransientBodyError} when the body is empty, truncated or not JSON; the reason
 *   names the character position, the size in bytes and the media type, never the text
 */
export function parseJsonBody(res: Pick<HttpResponse, 'bodyText' | 'bytes' | 'headers'>): unknown {
  try {
    return JSON.parse(res.bodyText);
  } catch (err) {
    const message = err instanceof Error ? err.message : '';
    const position = /at position (\d+)/.exec(message)?.[1];
    const atEnd = /Unexpected end of JSON input/i.test(message);
    throw notJson(res, atEnd ? res.bodyText.length : position === undefined ? undefined : Number(position));
  }
}

/**
 * The unreadable-body error for a body that is not JSON, described by the character where its
 * grammar breaks (`undefined`: unknown), its size and media type, never its text.
 */
export function notJson(res: Pick<HttpResponse, 'bodyText' | 'bytes' | 'headers'>, position: number | undefined): TransientBodyError {
  const rawType = res.headers['content-type'];
  const mediaType = /^[\w.+-]+\/[\w.+-]+/.exec(String(Array.isArray(rawType) ? rawType[0] : (rawType ?? '')))?.[0] ?? 'none';
  const facts = `${res.bytes} bytes, content-type ${mediaType}`;
  if (res.bodyText.trim() === '') return new TransientBodyError(`body is empty (${facts})`);
  if (position !== undefined && position >= res.bodyText.trimEnd().length)
    return new TransientBodyError(`body ends before its JSON is complete: truncated (${facts})`);
  if (position !== undefined) return new TransientBodyError(`body is not valid JSON at character ${position} (${facts})`);
  return new TransientBodyError(`body is not valid JSON (${facts})`);
}
