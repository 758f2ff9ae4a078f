/**
 * Faults of the transport phase (faults.ts): status bursts, latency, hangs, stalls,
 * resets, truncation, drip-feeding, non-JSON and HTML bodies, oversized bodies, redirects —
 * an infrastructure fault in front of any endpoint.
 *
 * @module
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FaultEndpoint, FaultRule } from './faults.js';
import { DEFAULT_ERROR, errorBody, flat, JSON_TYPE, send, type Prepared } from './http.js';

/** What the transport faults need of the server. */
export interface TransportIo {
  /** Waits `ms` ms (never resolves once the server closed). */
  sleep(ms: number): Promise<void>;
  /** Runs `fn` after `ms` ms unless the server closes first. */
  later(ms: number, fn: () => void): void;
  /** True once the server is closing. */
  closed(): boolean;
  /** `http://host:port`. */
  baseUrl(): string;
  /** The first stored event's bytes, when there is one (kind `oversized`). */
  sampleEvent(): Buffer | undefined;
}

const COMMA = Buffer.from(',');

/**
 * Applies a transport-phase rule that fired for `endpoint`; `clean` computes the proper
 * answer for the kinds that send (part of) it.
 *
 * @returns true when the response is taken care of (sent, broken or hanging), false to
 *   answer normally (after `latency`, or a kind of another phase)
 */
export async function applyTransportFault(
  rule: FaultRule,
  endpoint: FaultEndpoint,
  res: ServerResponse,
  clean: () => Promise<Prepared>,
  io: TransportIo,
): Promise<boolean> {
  switch (rule.kind) {
    case 'status': {
      const code = rule.code!;
      const headers: Record<string, string> = {};
      if (rule.retryAfter !== undefined) headers['retry-after'] = String(rule.retryAfter);
      if (code === 401 && endpoint === 'events') headers['www-authenticate'] = 'Bearer error="invalid_token"';
      if (rule.body !== undefined)
        send(res, { status: code, headers: { 'content-type': JSON_TYPE, ...headers }, body: Buffer.from(rule.body) });
      else send(res, errorBody(code, DEFAULT_ERROR[code] ?? 'error', `simulated HTTP ${code}`, headers));
      return true;
    }
    case 'latency':
      await io.sleep(rule.ms ?? 0);
      return io.closed() || res.destroyed;
    case 'headersNever':
      return true;
    case 'bodyStall':
    case 'resetMidBody':
    case 'truncated': {
      const p = await clean();
      const body = flat(p);
      const at = Math.min(rule.at ?? Math.floor(body.length / 2), body.length);
      const headers: Record<string, string> = { ...p.headers };
      if (rule.kind === 'truncated' && rule.chunked === true) headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = String(body.length);
      res.writeHead(p.status, headers);
      res.flushHeaders();
      const part = body.subarray(0, at);
      const after = (): void => {
        const sock = res.socket;
        if (sock === null) return;
        if (rule.kind === 'truncated') sock.end();
        else if (rule.kind === 'resetMidBody') {
          // Give the client a moment to read the partial body, then send a TCP RST.
          io.later(25, () => sock.resetAndDestroy());
        }
      };
      if (part.length > 0) res.write(part, after);
      else setImmediate(after);
      return true;
    }
    case 'nonJson':
      send(res, {
        status: 200,
        headers: { 'content-type': JSON_TYPE },
        body: Buffer.from(rule.body ?? 'upstream request timeout; please retry'),
      });
      return true;
    case 'html200':
      send(res, {
        status: 200,
        headers: { 'content-type': 'text/html; charset=utf-8' },
        body: Buffer.from(
          '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1><p>The upstream server returned an invalid response. Please try again later.</p></body></html>\n',
        ),
      });
      return true;
    case 'oversized':
      await sendOversized(res, rule.size ?? 64 * 1024 * 1024, io);
      return true;
    case 'redirect': {
      const url = rule.url ?? 'http://127.0.0.1:9/trap';
      send(res, errorBody(302, 'moved', 'moved', { location: url }));
      return true;
    }
    case 'drip':
      await drip(res, await clean(), rule.ms ?? 5000, io);
      return true;
    default:
      return false;
  }
}

/** Sends `p` with its full `Content-Length`: headers and the first byte at once, then one byte every `ms` ms. */
async function drip(res: ServerResponse, p: Prepared, ms: number, io: TransportIo): Promise<void> {
  const body = flat(p);
  res.writeHead(p.status, { ...p.headers, 'content-length': String(body.length) });
  if (body.length === 0) {
    res.end();
    return;
  }
  for (let i = 0; i < body.length; i++) {
    if (i > 0) await io.sleep(ms);
    if (io.closed() || res.destroyed) return;
    res.write(body.subarray(i, i + 1));
  }
  res.end();
}

/** Kind `oversized`: a valid-looking events page of exactly `size` bytes, streamed with backpressure. */
async function sendOversized(res: ServerResponse, size: number, io: TransportIo): Promise<void> {
  const sample =
    io.sampleEvent() ??
    Buffer.from(
      '{"id":"00000000-0000-4000-8000-000000000000","publishedTime":"2026-01-05T08:00:00.000Z","eventType":"v1.patient.created","message":{}}',
    );
  const prefix = Buffer.from('{"events":[');
  const suffix = Buffer.from(`],"pagination":{"nextPage":"${io.baseUrl()}/rpi/events?cursor=oversized","hasNextPage":true}}`);
  const unit = Buffer.concat([COMMA, sample]);
  let remaining = size - prefix.length - suffix.length - sample.length;
  res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': String(size) });
  const write = async (b: Buffer): Promise<boolean> => {
    if (res.destroyed) return false;
    if (!res.write(b)) {
      const closed = once(res, 'close').then(() => false);
      const drained = once(res, 'drain').then(() => true);
      return Promise.race([closed, drained]);
    }
    return true;
  };
  if (remaining < 0) {
    // Too small for one event: an empty array padded with spaces.
    await write(Buffer.concat([prefix, Buffer.alloc(Math.max(0, size - prefix.length - suffix.length), ' '), suffix]));
    res.end();
    return;
  }
  if (!(await write(Buffer.concat([prefix, sample])))) return;
  const perChunk = Math.max(1, Math.floor((1024 * 1024) / unit.length));
  const chunk = Buffer.concat(Array.from({ length: perChunk }, () => unit));
  while (remaining >= unit.length) {
    const n = Math.min(perChunk, Math.floor(remaining / unit.length));
    if (!(await write(n === perChunk ? chunk : chunk.subarray(0, n * unit.length)))) return;
    remaining -= n * unit.length;
  }
  await write(Buffer.concat([Buffer.alloc(remaining, ' '), suffix]));
  res.end();
}
