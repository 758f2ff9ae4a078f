import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger, errorReason, MAX_REASON_LENGTH } from '../../../src/log/logger.js';
import { REDACTED, SecretRegistry } from '../../../src/log/secrets.js';
import { Warehouse } from '../../../src/warehouse/Warehouse.js';

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
  const logger = createLogger({ destination, level: 'trace', ...(secrets ? { secrets } : {}) });
  return { logger, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, Record<string, unknown>>), lines };
}

describe('the logger keeps error reasons and censors payload messages', () => {
  it('an error reason is logged: { err: { message } }, { err: Error }, { error: { message } }', () => {
    const { logger, parsed } = capture();
    logger.warn({ err: { message: 'could not restore a DuckDB setting: Out of Memory Error' } }, 'w1');
    logger.warn({ err: new Error('rollback failed: disk full') }, 'w2');
    logger.error({ error: { message: 'checkpoint failed' } }, 'w3');
    const [a, b, c] = parsed();
    expect(a!['err']!['message']).toBe('could not restore a DuckDB setting: Out of Memory Error');
    expect(b!['err']!['message']).toBe('rollback failed: disk full');
    expect(String(b!['err']!['stack'])).toMatch(/^Error: rollback failed: disk full\n\s+at /);
    expect(c!['error']!['message']).toBe('checkpoint failed');
  });

  it("a real DuckDB error's reason reaches the log line", async () => {
    const wh = await Warehouse.open(':memory:');
    let err: unknown;
    try {
      await wh.run("SET memory_limit = 'lots'");
    } catch (e) {
      err = e;
    } finally {
      await wh.close();
    }
    expect(err).toBeInstanceOf(Error);
    const { logger, parsed } = capture();
    logger.warn({ err: { message: (err as Error).message } }, 'could not restore a DuckDB setting');
    const reason = String(parsed()[0]!['err']!['message']);
    expect(reason).not.toBe(REDACTED);
    expect(reason.length).toBeGreaterThan(10);
    expect(reason).toBe(errorReason((err as Error).message));
  });

  it('every other message stays censored: payload objects and strings', () => {
    const { logger, parsed, lines } = capture();
    logger.info(
      {
        event: { message: { referralSubjectId: 'SUBJ-CANARY-1' } },
        page: { message: 'SUBJ-CANARY-2 as a string payload' },
        message: 'SUBJ-CANARY-3 at the top',
        token: 'CANARY-TOKEN-x',
      },
      'x',
    );
    const line = parsed()[0]!;
    expect(line['event']).toEqual({ message: REDACTED });
    expect(line['page']).toEqual({ message: REDACTED });
    expect(line['message']).toBe(REDACTED);
    expect(line['token']).toBe(REDACTED);
    expect(lines[0]).not.toContain('CANARY');
  });

  it("an error reason is one line, without DuckDB's quote of its input, bounded, and scrubbed of secrets", () => {
    const secrets = new SecretRegistry();
    secrets.addSecret('CANARY-SECRET-77aa');
    const { logger, lines, parsed } = capture(secrets);
    logger.warn(
      {
        err: { message: 'Conversion Error: Malformed JSON at byte 2 of input: unexpected character.  Input: {"subject":"SUBJ-CANARY-5"}' },
      },
      'a',
    );
    logger.warn({ err: { message: `first line\nsecond line SUBJ-CANARY-6` } }, 'b');
    logger.warn({ err: { message: 'x'.repeat(5000) } }, 'c');
    logger.warn({ err: { message: 'token endpoint said invalid_client CANARY-SECRET-77aa' } }, 'd');
    const [a, b, c, d] = parsed();
    expect(a!['err']!['message']).toBe('Conversion Error: Malformed JSON at byte 2 of input: unexpected character. Input: [redacted]');
    expect(b!['err']!['message']).toBe('first line');
    expect(String(c!['err']!['message']).length).toBe(MAX_REASON_LENGTH + 1);
    expect(d!['err']!['message']).toBe(`token endpoint said invalid_client ${REDACTED}`);
    expect(lines.join('\n')).not.toContain('CANARY');
  });
});
