/**
 * A token endpoint that echoes the posted client secret in its OAuth error must not get it
 * into stdout logs, the stderr line or etl.runs (docs/security.md). In-process CLI run
 * against a stub token endpoint and a real DuckDB file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { run } from '../../../src/cli/main.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';
import { RunLog } from '../../../src/warehouse/RunLog.js';
import { SecretRegistry } from '../../../src/log/secrets.js';
import { createLogger } from '../../../src/log/logger.js';
import { TokenProvider } from '../../../src/upstream/auth.js';
import { HttpClient } from '../../../src/upstream/http.js';
import { AuthError, UpstreamContractError } from '../../../src/errors.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { fakeSleep, sendJson, startStub, type StubHandler } from '../upstream/stub.js';
import { tempDir } from '../../helpers/tmp.js';

const SECRET = 'CANARY-SECRET-echo-4c1d9e';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function sink(): { stream: Writable; text: () => string } {
  let out = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out += chunk.toString('utf8');
      cb();
    },
  });
  return { stream, text: () => out };
}

async function extractAgainst(handler: StubHandler): Promise<{ code: number; stdout: string; stderr: string; runs: string }> {
  const auth = await startStub(handler);
  const tmp = tempDir('recruit-etl-echo-');
  cleanups.push(
    () => tmp.cleanup(),
    () => auth.close(),
  );
  const db = join(tmp.dir, 'warehouse.duckdb');
  const stdout = sink();
  const stderr = sink();
  const code = await run(
    [
      'extract',
      '--db',
      db,
      '--base-url',
      auth.origin,
      '--auth-url',
      auth.origin,
      '--client-id',
      'client-1',
      '--client-secret',
      SECRET,
      '--audience',
      'https://api.example',
      '--trial-id',
      't1',
      '--log-level',
      'trace',
      '--verbose',
    ],
    { stdout: stdout.stream, stderr: stderr.stream, handleSignals: false },
  );
  const wh = await Warehouse.open(db, { memoryLimit: '256MB' });
  let runs: string;
  try {
    runs = JSON.stringify(await wh.all('select * from etl.runs'), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  } finally {
    await wh.close();
  }
  return { code, stdout: stdout.text(), stderr: stderr.text(), runs };
}

describe('a token endpoint echoing the client secret', () => {
  it.each([
    [
      '400 with the secret in error and error_description',
      (_q: unknown, res: Parameters<StubHandler>[1]) =>
        sendJson(res, 400, { error: `invalid_client ${SECRET}`, error_description: SECRET }),
    ],
    ['400 whose error code IS the secret', (_q: unknown, res: Parameters<StubHandler>[1]) => sendJson(res, 400, { error: SECRET })],
    [
      '401 with the secret in a header-less body',
      (_q: unknown, res: Parameters<StubHandler>[1]) => {
        res.writeHead(401);
        res.end(`{"error":"${SECRET}"}`);
      },
    ],
  ])('%s: exit 3, the secret in no log line, no stderr line, no etl.runs row', async (_name, handler) => {
    const out = await extractAgainst(handler as StubHandler);
    expect(out.code).toBe(3);
    expect(out.stderr).toMatch(/^recruit-etl: error: .*the token endpoint refused the client credentials \(HTTP 40[01]/);
    expect(out.stdout).toContain('run failed');
    expect(out.runs).toContain('"failed"');
    for (const text of [out.stdout, out.stderr, out.runs]) expect(text).not.toContain('CANARY-SECRET');
  });
});

describe('a token value echoed in a later error', () => {
  it('is registered as issued and disappears from logs, the stderr line and etl.runs', async () => {
    const token = 'CANARY-TOKEN-issued-9b8a7f';
    const auth = await startStub((_q, res) => sendJson(res, 200, { access_token: token, expires_in: 3600, token_type: 'Bearer' }));
    const http = new HttpClient({ sleep: fakeSleep().sleep });
    const tmp = tempDir('recruit-etl-echo-');
    cleanups.push(
      () => tmp.cleanup(),
      () => auth.close(),
      () => http.close(),
    );
    const secrets = new SecretRegistry();
    const tokens = new TokenProvider({
      credentials: { authUrl: auth.origin, clientId: 'c', clientSecret: SECRET, audience: 'a' },
      http,
      secrets,
    });
    expect(await tokens.getToken()).toBe(token);

    // Whatever later echoes it: a log line, the CLI's error line, the run record.
    const lines = sink();
    const log = createLogger({ level: 'trace', secrets, destination: lines.stream });
    log.warn({ reason: `server said Bearer ${token}` }, 'retrying');
    const err = new UpstreamContractError(`the upstream quoted ${token} and ${SECRET}`);
    const { text } = describeFailure(err, true, secrets);
    const wh = await Warehouse.open(join(tmp.dir, 'w.duckdb'), { memoryLimit: '256MB' });
    let row: string;
    try {
      await wh.migrate();
      const runLog = new RunLog(wh, secrets);
      await runLog.start('r1', 'extract', 'test');
      await runLog.finish('r1', 'failed', {}, { note: `token ${token}` }, err.message);
      row = JSON.stringify(await wh.all('select error, summary from etl.runs'));
    } finally {
      await wh.close();
    }
    for (const t of [lines.text(), text, row]) {
      expect(t).not.toContain('CANARY-TOKEN');
      expect(t).not.toContain('CANARY-SECRET');
      expect(t).toContain('[redacted]');
    }
  });

  it('the token provider never quotes its own secret or tokens, even without a shared registry', async () => {
    const auth = await startStub((_q, res) => sendJson(res, 403, { error: SECRET }));
    const http = new HttpClient({ sleep: fakeSleep().sleep });
    cleanups.push(
      () => auth.close(),
      () => http.close(),
    );
    const tokens = new TokenProvider({ credentials: { authUrl: auth.origin, clientId: 'c', clientSecret: SECRET, audience: 'a' }, http });
    const err = await tokens.getToken().catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as Error).message).not.toContain('CANARY');
  });
});
