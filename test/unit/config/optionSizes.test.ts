/**
 * Every string option has a maximum size in UTF-8 bytes, declared in the zod schema
 * (OPTION_MAX_BYTES; docs/contracts.md "Options", "Sizes"); beyond it the value is exit 2
 * naming the option, and the message never quotes the value (issue 26 point 9: a 50 MB
 * `environment` was exit 7, DuckDB out of memory, with the run row left `running`).
 */
import { describe, expect, it } from 'vitest';
import { OPTION_MAX_BYTES, OPTIONS, optionLabel, resolveConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/errors.js';

function refusal(raw: Record<string, unknown>): string {
  try {
    resolveConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error('accepted');
}

/** Each string option and the size class it belongs to (docs/contracts.md "Options", "Sizes"). */
const CLASSES: Record<string, keyof typeof OPTION_MAX_BYTES> = {
  config: 'path',
  db: 'path',
  environment: 'label',
  memoryLimit: 'label',
  metricsFile: 'path',
  failpoint: 'id',
  baseUrl: 'url',
  authUrl: 'url',
  clientId: 'id',
  clientSecret: 'secret',
  clientSecretFile: 'path',
  audience: 'url',
  trialId: 'id',
  eventType: 'id',
  micrositeId: 'id',
  origin: 'url',
  siteNames: 'path',
  exportDir: 'path',
  lake: 'url',
  lakeDataPath: 'url',
  lakeSchema: 'label',
};

describe('string options have sizes', () => {
  it('regression: a 50 MB --environment is exit 2 naming the option, at once, without quoting it (was: exit 7, run row left running)', () => {
    const huge = 'p'.repeat(50 * 1024 * 1024);
    const t0 = performance.now();
    const message = refusal({ environment: huge });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(message).toBe('invalid configuration: --environment (RECRUIT_ETL_ENVIRONMENT): must be at most 64 bytes (UTF-8)');
  });

  it('the limits are ids 256 B, labels 64 B, URLs 8 KiB, paths 4 KiB, the secret 64 KiB', () => {
    expect(OPTION_MAX_BYTES).toEqual({ id: 256, label: 64, url: 8192, path: 4096, secret: 65536 });
  });

  it('every string option refuses a 1 MB value with exit 2 naming it, and a message of bounded length', () => {
    for (const spec of OPTIONS.filter((o) => o.type === 'string')) {
      const value = 'a'.repeat(1024 * 1024);
      const message = refusal({ [spec.key]: spec.array ? [value] : value });
      expect(message, spec.key).toContain(optionLabel(spec.key));
      expect(message.length, spec.key).toBeLessThan(400);
    }
  });

  it('each option of a size class takes its limit and refuses one byte more, counted in UTF-8 bytes', () => {
    for (const [key, cls] of Object.entries(CLASSES)) {
      const max = OPTION_MAX_BYTES[cls];
      // 'é' is two bytes: max/2 + 1 of them is one character over half the limit, two bytes over it.
      const over = 'é'.repeat(max / 2 + 1);
      const spec = OPTIONS.find((o) => o.key === key)!;
      expect(spec, key).toBeDefined();
      expect(refusal({ [key]: spec.array ? [over] : over }), key).toContain(`${optionLabel(key)}: must be at most`);
    }
    const at = (n: number): string => 'x'.repeat(n);
    const c = resolveConfig({
      environment: at(64),
      clientId: at(256),
      trialId: [at(256)],
      db: `/${at(4095)}`,
      clientSecret: at(65536),
      baseUrl: `http://h/${at(8192 - 9)}`,
    });
    expect(c.environment).toHaveLength(64);
    expect(c.trialId[0]).toHaveLength(256);
    expect(c.db).toHaveLength(4096);
    expect(c.clientSecret).toHaveLength(65536);
    expect(c.baseUrl).toHaveLength(8192);
  });
});
