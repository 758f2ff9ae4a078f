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
    throw new TransientBodyError(describeJsonError(err, res));
  }
}

function describeJsonError(err: unknown, res: Pick<HttpResponse, 'bodyText' | 'bytes' | 'headers'>): string {
  const rawType = res.headers['content-type'];
  const mediaType = /^[\w.+-]+\/[\w.+-]+/.exec(String(Array.isArray(rawType) ? rawType[0] : (rawType ?? '')))?.[0] ?? 'none';
  const facts = `${res.bytes} bytes, content-type ${mediaType}`;
  if (res.bodyText.trim() === '') return `body is empty (${facts})`;
  const message = err instanceof Error ? err.message : '';
  const position = /at position (\d+)/.exec(message)?.[1];
  const atEnd = position !== undefined && Number(position) >= res.bodyText.trimEnd().length;
  if (atEnd || /Unexpected end of JSON input/i.test(message)) return `body ends before its JSON is complete: truncated (${facts})`;
  if (position !== undefined) return `body is not valid JSON at character ${position} (${facts})`;
  return `body is not valid JSON (${facts})`;
}
