/**
 * The client secret and its file are one setting (issue 25 "Secrets", docs/contracts.md
 * "Options"): the highest source that gives either wins (flag > environment > config file),
 * both at one source is exit 2 naming both, and the file is read as an input file
 * (src/fs/inputFile.ts: regular, at most 64 KiB).
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KNOWN_KEYS } from '../../../src/cli/options.js';
import { gatherOptions, optionsFor, readConfigFile, resolveConfig, type Config } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/errors.js';
import { tempDir } from '../../helpers/tmp.js';

const tmp = tempDir('recruit-etl-secret-');
afterAll(() => tmp.cleanup());

const REQUIRED = {
  'base-url': 'http://127.0.0.1:1',
  'auth-url': 'http://127.0.0.1:1',
  'client-id': 'id',
  audience: 'aud',
  'trial-id': 't1',
};

/** The options of `extract` from these sources, as the CLI gathers and resolves them. */
function resolveFrom(flags: Record<string, unknown>, env: Record<string, string>, file?: Record<string, unknown>): Config {
  const configPath = join(tmp.dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(configPath, JSON.stringify({ ...REQUIRED, ...file }));
  const fromFile = readConfigFile(configPath, KNOWN_KEYS);
  return resolveConfig(gatherOptions(optionsFor('extract'), { flags, env, file: fromFile }), ['events']);
}

function refused(f: () => unknown): ConfigError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    return err as ConfigError;
  }
  throw new Error('accepted');
}

const good = join(tmp.dir, 'good-secret');
writeFileSync(good, 'from-the-file\n');

describe('the client secret: one setting, flag > environment > config file', () => {
  it('regression: a --client-secret-file flag beats RECRUIT_ETL_CLIENT_SECRET left in the environment (was: the variable won, exit 3)', () => {
    const c = resolveFrom({ clientSecretFile: good }, { RECRUIT_ETL_CLIENT_SECRET: 'stale-env-secret' });
    expect(c.clientSecret).toBe('from-the-file');
  });

  it('regression: a bad secret file given as a flag is exit 2 even with the variable set (was: silently ignored)', () => {
    const missing = join(tmp.dir, 'no-such-secret');
    const e = refused(() => resolveFrom({ clientSecretFile: missing }, { RECRUIT_ETL_CLIENT_SECRET: 'stale-env-secret' }));
    expect(e.message).toBe(`--client-secret-file (RECRUIT_ETL_CLIENT_SECRET_FILE): cannot read ${missing}: no such file`);
    const folder = refused(() => resolveFrom({ clientSecretFile: tmp.dir }, { RECRUIT_ETL_CLIENT_SECRET: 'stale-env-secret' }));
    expect(folder.message).toMatch(/^--client-secret-file \(RECRUIT_ETL_CLIENT_SECRET_FILE\): .* is a folder, not a regular file$/);
  });

  it('each level beats the ones below it, whichever of the two options it gives', () => {
    expect(resolveFrom({ clientSecret: 'flag' }, { RECRUIT_ETL_CLIENT_SECRET_FILE: good }).clientSecret).toBe('flag');
    expect(resolveFrom({}, { RECRUIT_ETL_CLIENT_SECRET_FILE: good }, { 'client-secret': 'in-config' }).clientSecret).toBe('from-the-file');
    expect(resolveFrom({}, { RECRUIT_ETL_CLIENT_SECRET: 'env' }, { 'client-secret-file': join(tmp.dir, 'nope') }).clientSecret).toBe('env');
    expect(resolveFrom({}, {}, { 'client-secret-file': good }).clientSecret).toBe('from-the-file');
    // An empty variable counts as unset: the config file's value applies.
    expect(resolveFrom({}, { RECRUIT_ETL_CLIENT_SECRET: '' }, { 'client-secret-file': good }).clientSecret).toBe('from-the-file');
  });

  it('both at the same level is exit 2 naming both options: as flags, as variables, in the config file', () => {
    const both =
      /--client-secret \(RECRUIT_ETL_CLIENT_SECRET\) and --client-secret-file \(RECRUIT_ETL_CLIENT_SECRET_FILE\) are one setting, given both at the same level/;
    expect(refused(() => resolveFrom({ clientSecret: 'a', clientSecretFile: good }, {})).message).toMatch(both);
    expect(refused(() => resolveFrom({}, { RECRUIT_ETL_CLIENT_SECRET: 'a', RECRUIT_ETL_CLIENT_SECRET_FILE: good })).message).toMatch(both);
    const e = refused(() => resolveFrom({}, {}, { 'client-secret': 'a-config-secret', 'client-secret-file': good }));
    expect(e.message).toMatch(both);
    expect(e.message).not.toContain('a-config-secret');
  });

  it('the file must be a regular file of at most 64 KiB; a symlink to one is fine (Kubernetes)', () => {
    const label = '--client-secret-file (RECRUIT_ETL_CLIENT_SECRET_FILE)';
    const big = join(tmp.dir, 'big-secret');
    writeFileSync(big, Buffer.alloc(64 * 1024 + 1, 0x61));
    expect(refused(() => resolveFrom({ clientSecretFile: big }, {})).message).toBe(
      `${label}: ${big} is 65537 bytes, over the 64 KiB limit`,
    );
    writeFileSync(big, Buffer.alloc(64 * 1024, 0x61));
    expect(resolveFrom({ clientSecretFile: big }, {}).clientSecret).toHaveLength(64 * 1024);
    // A FIFO and /dev/zero: test/integration/cli/inputFiles.test.ts, in a child process with a deadline.
    expect(refused(() => resolveFrom({ clientSecretFile: '/dev/null' }, {})).message).toBe(
      `${label}: /dev/null is a character device, not a regular file`,
    );
    const empty = join(tmp.dir, 'empty-secret');
    writeFileSync(empty, '\n');
    expect(refused(() => resolveFrom({ clientSecretFile: empty }, {})).message).toBe(`${label}: ${empty} is empty`);
    mkdirSync(join(tmp.dir, 'k8s', '..2026_11_27'), { recursive: true });
    writeFileSync(join(tmp.dir, 'k8s', '..2026_11_27', 'client-secret'), 'mounted\n');
    symlinkSync('..2026_11_27', join(tmp.dir, 'k8s', '..data'));
    symlinkSync('..data/client-secret', join(tmp.dir, 'k8s', 'client-secret'));
    expect(resolveFrom({ clientSecretFile: join(tmp.dir, 'k8s', 'client-secret') }, {}).clientSecret).toBe('mounted');
  });
});
