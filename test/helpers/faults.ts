/**
 * Helpers of the fault, leak, token and concurrency suites (test/faults): a fast HTTP
 * policy, reading the warehouse state back, trap listeners, closed ports, a token-recording
 * proxy in front of the simulator's token endpoint, and a CLI child process with its PID.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { expect } from 'vitest';
import { DEFAULT_EVENT_TYPES } from '../../src/config/config.js';
import { describeFailure } from '../../src/cli/exit.js';
import { runJob, type JobResult } from '../../src/pipeline/jobs.js';
import { decodeCursor } from '../../packages/mock-api/src/cursor.js';
import { expectedEvents, type MockApi, type TruthEvent } from '../../packages/mock-api/src/index.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { HttpClient, type HttpPolicy } from '../../src/upstream/http.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { CLI, ROOT, type CliResult } from './cli.js';
import { configFor } from './sim.js';

/** Retry policy that keeps fault tests fast: 3 attempts, waits of a few ms, 500 ms timeouts. */
export const FAST_POLICY: Partial<HttpPolicy> = {
  minRetryDelayMs: 5,
  maxRetryDelayMs: 20,
  headersTimeoutMs: 500,
  bodyTimeoutMs: 500,
  connectTimeoutMs: 500,
  maxAttempts: 3,
  maxPostAttempts: 3,
};

/** A new HttpClient with {@link FAST_POLICY} (plus overrides). Close it after the run. */
export function fastHttp(policy: Partial<HttpPolicy> = {}): HttpClient {
  return new HttpClient({ policy: { ...FAST_POLICY, ...policy } });
}

/** The events the default configuration must load from `api` (every trial, default types). */
export function expectedAll(api: MockApi): TruthEvent[] {
  return expectedEvents(api.truth, { trialIds: api.truth.trialIds, eventTypes: [...DEFAULT_EVENT_TYPES] });
}

/** Outcome of one in-process extract: the result, or the error with its exit code. */
export interface Outcome {
  result?: JobResult;
  error?: unknown;
  exitCode: number;
  message: string;
  ms: number;
}

/** Runs `runJob('extract', ['extract'])` with a fast HTTP client and maps a failure to its exit code. */
export async function extractOnce(
  api: MockApi,
  db: string,
  extra: Record<string, unknown> = {},
  policy: Partial<HttpPolicy> = {},
  logger?: Logger,
): Promise<Outcome> {
  const http = fastHttp(policy);
  const started = Date.now();
  try {
    const result = await runJob('extract', ['extract'], {
      config: configFor(api, db, { batchPages: 1, ...extra }),
      http,
      ...(logger ? { logger } : {}),
    });
    return { result, exitCode: 0, message: '', ms: Date.now() - started };
  } catch (error) {
    const { exitCode, text } = describeFailure(error, false);
    return { error, exitCode, message: text, ms: Date.now() - started };
  } finally {
    await http.close();
  }
}

/** What the warehouse holds after a run. */
export interface DbState {
  /** raw.events of the (single) active stream, by position. */
  ids: string[];
  positions: number[];
  streams: Array<{ streamId: string; status: string; nextPage: string | null; hasNextPage: boolean | null; eventCount: number }>;
  runs: Array<{ runId: string; command: string; status: string; error: string | null; eventsLoaded: number; pagesFetched: number }>;
}

/** Reads raw.events, etl.streams and etl.runs (read-only open; the file must not be locked). */
export async function readDb(db: string): Promise<DbState> {
  const wh = await Warehouse.open(db, { readOnly: true });
  try {
    const rows = await wh.all<{ p: bigint; id: string }>(
      "select stream_position as p, event_id as id from raw.events where stream_id in (select stream_id from etl.streams where status = 'active') order by stream_position",
    );
    const streams = await wh.all<{
      stream_id: string;
      status: string;
      next_page: string | null;
      has_next_page: boolean | null;
      event_count: bigint;
    }>('select stream_id, status, next_page, has_next_page, event_count from etl.streams order by created_at');
    const runs = await wh.all<{
      run_id: string;
      command: string;
      status: string;
      error: string | null;
      events_loaded: bigint;
      pages_fetched: bigint;
    }>('select run_id, command, status, error, events_loaded, pages_fetched from etl.runs order by started_at, run_id');
    return {
      ids: rows.map((r) => r.id),
      positions: rows.map((r) => Number(r.p)),
      streams: streams.map((s) => ({
        streamId: s.stream_id,
        status: s.status,
        nextPage: s.next_page,
        hasNextPage: s.has_next_page,
        eventCount: Number(s.event_count),
      })),
      runs: runs.map((r) => ({
        runId: r.run_id,
        command: r.command,
        status: r.status,
        error: r.error,
        eventsLoaded: Number(r.events_loaded),
        pagesFetched: Number(r.pages_fetched),
      })),
    };
  } finally {
    await wh.close();
  }
}

/** The simulator cursor inside a stored `nextPage` (tests may look inside; the product never does). */
export function cursorOf(nextPage: string | null): { after: number; afterId: string | null } | undefined {
  if (nextPage === null) return undefined;
  const text = new URL(nextPage).searchParams.get('cursor');
  if (text === null) return undefined;
  const c = decodeCursor(text);
  return c && { after: c.after, afterId: c.afterId };
}

/**
 * Asserts that the warehouse holds exactly the first `n` expected events at positions 1..n,
 * none twice, and that the stored cursor of the active stream continues right after event n:
 * `event_count` is n, and the simulator cursor's keyset position lies after event n and no
 * later than the next expected event (it may skip events of other types or trials). `all` is
 * the simulator's whole stream (`api.truth.events`), of which `expected` is a filtered prefix.
 */
export function expectPrefix(state: DbState, expected: readonly TruthEvent[], n: number, all: readonly TruthEvent[]): void {
  expect(state.ids).toEqual(expected.slice(0, n).map((e) => e.id));
  expect(state.positions).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  expect(new Set(state.ids).size).toBe(state.ids.length);
  const active = state.streams.filter((s) => s.status === 'active');
  expect(active).toHaveLength(1);
  const stream = active[0]!;
  expect(stream.eventCount).toBe(n);
  if (n === 0) {
    expect(stream.nextPage).toBeNull();
    return;
  }
  const c = cursorOf(stream.nextPage);
  expect(c, 'stored cursor is a simulator nextPage').toBeDefined();
  const index = new Map(all.map((e, i) => [e.id, i]));
  const lastStored = index.get(expected[n - 1]!.id)!;
  const nextExpected = n < expected.length ? index.get(expected[n]!.id)! : all.length;
  expect(c!.after, 'stored cursor is not before the last stored event').toBeGreaterThanOrEqual(lastStored + 1);
  expect(c!.after, 'stored cursor does not skip the next expected event').toBeLessThanOrEqual(nextExpected);
  expect(c!.afterId).toBe(all[c!.after - 1]!.id);
}

/** Asserts the warehouse holds every expected event exactly once, in order, at 1..n, the stream drained. */
export function expectExactly(state: DbState, expected: readonly TruthEvent[], all: readonly TruthEvent[]): void {
  expectPrefix(state, expected, expected.length, all);
  const active = state.streams.find((s) => s.status === 'active')!;
  expect(active.hasNextPage).toBe(false);
}

/** Number of requests the simulator logged with this status on a path. */
export function countStatus(api: MockApi, path: string, status: number): number {
  return api.stats.requestLog.filter((r) => r.path === path && r.status === status).length;
}

/** An HTTP listener that must receive nothing: counts every connection and request. */
export interface Trap {
  url: string;
  port: number;
  connections: number;
  requests: Array<{ method: string; url: string; authorization: boolean }>;
  close(): Promise<void>;
}

/** Starts a {@link Trap} on 127.0.0.1 and a free port. */
export async function startTrap(): Promise<Trap> {
  const sockets = new Set<Socket>();
  const trap: Trap = {
    url: '',
    port: 0,
    connections: 0,
    requests: [],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    trap.requests.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization !== undefined });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"events":[],"pagination":{"nextPage":"http://127.0.0.1:9/x","hasNextPage":false}}');
  });
  server.on('connection', (s: Socket) => {
    trap.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('trap: no address');
  trap.port = addr.port;
  trap.url = `http://127.0.0.1:${addr.port}`;
  return trap;
}

/** A logger at debug level whose JSON lines are kept in `lines` (what an operator's log would hold). */
export function capturingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } });
  return { logger, lines };
}

/**
 * An upstream that writes raw bytes (framing undici refuses to produce itself): a `node:net`
 * server on 127.0.0.1 that reads each request head and answers the n-th request (1-based)
 * with `answer(n, base)` verbatim, then closes the connection.
 */
export async function startRawUpstream(
  answer: (n: number, baseUrl: string) => string | Buffer,
): Promise<{ baseUrl: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  let baseUrl = '';
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    socket.on('data', (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      head = '';
      count += 1;
      socket.end(answer(count, baseUrl));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    requests: () => count,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP port on 127.0.0.1 that was free a moment ago and has no listener now (connection refused). */
export async function closedPort(): Promise<number> {
  const srv = createNetServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no address');
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return addr.port;
}

/**
 * A recording reverse proxy for the token endpoint: `authUrl` forwards every request to
 * `target` and keeps each `access_token` it passes back (the simulator only counts tokens).
 */
export interface TokenTap {
  authUrl: string;
  tokens: string[];
  close(): Promise<void>;
}

export async function startTokenTap(target: string): Promise<TokenTap> {
  const t = new URL(target);
  const sockets = new Set<Socket>();
  const tap: TokenTap = {
    authUrl: '',
    tokens: [],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = { ...req.headers, host: t.host };
      const up = httpRequest({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (upRes: IncomingMessage) => {
        const body: Buffer[] = [];
        upRes.on('data', (c: Buffer) => body.push(c));
        upRes.on('end', () => {
          const buf = Buffer.concat(body);
          try {
            const j = JSON.parse(buf.toString('utf8')) as { access_token?: unknown };
            if (typeof j.access_token === 'string') tap.tokens.push(j.access_token);
          } catch {
            // not a token response
          }
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          res.end(buf);
        });
      });
      up.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      up.end(Buffer.concat(chunks));
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('tap: no address');
  tap.authUrl = `http://127.0.0.1:${addr.port}`;
  return tap;
}

/** A CLI child process started in the background, with its PID. */
export interface CliProcess {
  child: ChildProcess;
  pid: number;
  startedAt: number;
  /** Resolves when it exits; `ms` is the time from start to exit. */
  done: Promise<CliResult & { ms: number }>;
  /** stdout and stderr received so far. */
  output(): { stdout: string; stderr: string };
}

/** Starts the built CLI like {@link runCli} (clean RECRUIT_ETL_* environment) but without waiting. */
export function startCli(args: string[], env: Record<string, string>, opts: { timeoutMs?: number } = {}): CliProcess {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`make build\` (make test does it)`);
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && v !== undefined) base[k] = v;
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const startedAt = Date.now();
  const done = new Promise<CliResult & { ms: number }>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - startedAt });
    });
  });
  return { child, pid: child.pid!, startedAt, done, output: () => ({ stdout, stderr }) };
}

/** Polls `cond` every 20 ms until it holds or `timeoutMs` passes (then throws). */
export async function waitFor(cond: () => boolean, timeoutMs = 15_000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
