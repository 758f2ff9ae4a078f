import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/log/logger.js';
import { MAX_TOKENS, REDACTED, SecretRegistry } from '../../../src/log/secrets.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { AuthError } from '../../../src/errors.js';

const SECRET = 'CANARY-SECRET-7f3a9c';

function capture(secrets?: SecretRegistry) {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      cb();
    },
  });
  return { logger: createLogger({ destination, level: 'trace', ...(secrets ? { secrets } : {}) }), lines };
}

describe('SecretRegistry', () => {
  it('is a no-op (same string) while nothing is registered', () => {
    const r = new SecretRegistry();
    const text = `x ${SECRET} y`;
    expect(r.scrub(text)).toBe(text);
  });

  it('replaces every occurrence, its JSON-escaped and percent-encoded forms', () => {
    const r = new SecretRegistry();
    const secret = 'p"a\\ss w/rd';
    r.addSecret(secret);
    expect(r.scrub(`a ${secret} b ${secret}`)).toBe(`a ${REDACTED} b ${REDACTED}`);
    expect(r.scrub(JSON.stringify({ e: `echo ${secret}` }))).toBe(`{"e":"echo ${REDACTED}"}`);
    expect(r.scrub(`?s=${encodeURIComponent(secret)}`)).toBe(`?s=${REDACTED}`);
  });

  it('ignores values too short to tell apart from ordinary text', () => {
    const r = new SecretRegistry();
    r.addSecret('abc');
    r.addSecret(undefined);
    r.addSecret('');
    expect(r.size).toBe(0);
    expect(r.scrub('abc')).toBe('abc');
  });

  it('remembers issued tokens (JWT signature segment too), the newest MAX_TOKENS', () => {
    const r = new SecretRegistry();
    r.addToken('eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJlLXNlZ21lbnQ');
    expect(r.scrub('sig c2lnbmF0dXJlLXNlZ21lbnQ')).toBe(`sig ${REDACTED}`);
    for (let i = 0; i < MAX_TOKENS + 5; i++) r.addToken(`CANARY-TOKEN-${i}-padding`);
    expect(r.scrub('CANARY-TOKEN-0-padding')).toBe('CANARY-TOKEN-0-padding');
    expect(r.scrub(`CANARY-TOKEN-${MAX_TOKENS + 4}-padding`)).toBe(REDACTED);
  });
});

describe('logger', () => {
  it('a secret echoed inside an ordinary string is scrubbed from the log line (msg, fields, err)', () => {
    const secrets = new SecretRegistry();
    secrets.addSecret(SECRET);
    const { logger, lines } = capture(secrets);
    const child = logger.child({ stage: 'extract' });
    child.warn({ reason: `upstream said ${SECRET}`, err: new Error(`boom ${SECRET}`) }, `failed with ${SECRET}`);
    secrets.addToken('CANARY-TOKEN-issued-later');
    child.info({ detail: 'CANARY-TOKEN-issued-later' }, 'later');
    expect(lines).toHaveLength(2);
    for (const l of lines) {
      expect(l).not.toContain('CANARY');
      JSON.parse(l);
    }
    expect(lines[0]).toContain(REDACTED);
  });

  it('err.message strings are logged, not blanked by the redact path *.message', () => {
    const { logger, lines } = capture();
    logger.warn({ err: { message: 'rollback failed: disk full' } }, 'w1');
    logger.warn({ err: new Error('could not restore memory_limit') }, 'w2');
    const [a, b] = lines.map((l) => JSON.parse(l) as { err: { message: string } });
    expect(a!.err.message).toBe('rollback failed: disk full');
    expect(b!.err.message).toBe('could not restore memory_limit');
  });

  it('a message key holding an event payload object stays censored, as do credential keys', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        event: { message: { referralSubjectId: 'SUBJ-CANARY-1' } },
        message: { a: 1 },
        token: 'CANARY-TOKEN-x',
        client: { secret: 'CANARY-SECRET-y' },
      },
      'x',
    );
    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line['event']).toEqual({ message: REDACTED });
    expect(line['message']).toBe(REDACTED);
    expect(line['token']).toBe(REDACTED);
    expect(lines[0]).not.toContain('CANARY');
  });
});

describe('describeFailure', () => {
  it('scrubs the stderr line, its hint and the --verbose stacks and causes', () => {
    const secrets = new SecretRegistry();
    secrets.addSecret(SECRET);
    secrets.addToken('CANARY-TOKEN-abcdef');
    const err = new AuthError(`refused ${SECRET}`, { hint: `check CANARY-TOKEN-abcdef`, cause: new Error(`inner ${SECRET}`) });
    const { exitCode, text } = describeFailure(err, true, secrets);
    expect(exitCode).toBe(3);
    expect(text.startsWith('recruit-etl: error: refused [redacted] (check [redacted])')).toBe(true);
    expect(text).toContain('caused by:');
    expect(text).not.toContain('CANARY');
    const unexpected = describeFailure(new Error(`raw ${SECRET}`), true, secrets);
    expect(unexpected.exitCode).toBe(1);
    expect(unexpected.text).not.toContain('CANARY');
  });
});
