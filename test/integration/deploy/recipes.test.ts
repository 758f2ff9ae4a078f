/**
 * The scheduling recipes of docs/scheduling.md, parsed and checked as far as this machine
 * allows (no scheduler runs them here): the crontab line, the systemd units (also through
 * `systemd-analyze verify`, which the machine has), the Kubernetes CronJob (YAML) and the
 * Dockerfile. Every `RECRUIT_ETL_*` variable they set must be one the CLI reads.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KNOWN_VARIABLES } from '../../../src/cli/options.js';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');

/** Whether one crontab schedule field is valid for `[min, max]`: `*`, numbers, ranges, lists, steps. */
function cronField(field: string, min: number, max: number): boolean {
  return field.split(',').every((part) => {
    const m = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) return false;
    const nums = [m[2], m[3]].filter((x): x is string => x !== undefined).map(Number);
    return nums.every((n) => n >= min && n <= max) && (m[4] === undefined || Number(m[4]) > 0);
  });
}

function cronSchedule(fields: string[]): boolean {
  const bounds: [number, number][] = [
    [0, 59],
    [0, 23],
    [1, 31],
    [1, 12],
    [0, 7],
  ];
  return fields.length === 5 && fields.every((f, i) => cronField(f, ...bounds[i]!));
}

/** `KEY=VALUE` pairs of a systemd unit, by section (repeated keys kept in order). */
function unit(text: string): Map<string, [string, string][]> {
  const sections = new Map<string, [string, string][]>();
  let current: [string, string][] | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(\w+)\]$/.exec(line);
    if (section) {
      current = [];
      sections.set(section[1]!, current);
      continue;
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!kv || !current) throw new Error(`not a unit line: ${line}`);
    current.push([kv[1]!, kv[2]!]);
  }
  return sections;
}
const values = (u: Map<string, [string, string][]>, section: string, key: string): string[] =>
  (u.get(section) ?? []).filter(([k]) => k === key).map(([, v]) => v);

describe('crontab (deploy/crontab)', () => {
  const lines = read('deploy/crontab')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const assignments = lines.filter((l) => /^[A-Z_]+=/.test(l));
  const jobs = lines.filter((l) => !/^[A-Z_]+=/.test(l));

  it('one job line: a valid schedule and `recruit-etl run` (after the UTC-hour guard), no flock (exit 5 is the guard)', () => {
    expect(jobs).toHaveLength(1);
    // Debian's cron has no CRON_TZ: the line fires hourly and `date -u` picks the UTC hour (install.test.ts runs it).
    const fields = jobs[0]!
      .trim()
      .replace(/^(\S+\s+){5}\[ "\$\(date -u \+\\%H\)" = \d\d \] && /, (m) => m.split('[')[0]!)
      .split(/\s+/);
    expect(cronSchedule(fields.slice(0, 5))).toBe(true);
    expect(fields.slice(5, 7)).toEqual(['recruit-etl', 'run']);
    expect(jobs[0]).not.toMatch(/flock/);
    expect(cronSchedule(['61', '2', '*', '*', '*'])).toBe(false); // the check itself can fail
  });

  it('the secret comes from a file; every variable is one the CLI reads', () => {
    const names = assignments.map((l) => l.split('=')[0]!).filter((n) => n.startsWith('RECRUIT_ETL_'));
    expect(names).toContain('RECRUIT_ETL_CLIENT_SECRET_FILE');
    expect(names).not.toContain('RECRUIT_ETL_CLIENT_SECRET');
    for (const n of names) expect(KNOWN_VARIABLES.has(n), n).toBe(true);
  });
});

describe('systemd units (deploy/recruit-etl.service, deploy/recruit-etl.timer)', () => {
  const service = unit(read('deploy/recruit-etl.service'));
  const timer = unit(read('deploy/recruit-etl.timer'));

  it('the service: oneshot, the secret through LoadCredential= and --client-secret-file, exit 5 not a failure', () => {
    expect([...service.keys()]).toEqual(['Unit', 'Service', 'Install']);
    expect(values(service, 'Service', 'Type')).toEqual(['oneshot']);
    const cred = values(service, 'Service', 'LoadCredential');
    expect(cred).toHaveLength(1);
    const [name] = cred[0]!.split(':');
    const exec = values(service, 'Service', 'ExecStart');
    expect(exec).toHaveLength(1);
    expect(exec[0]).toMatch(/^\/\S+\/recruit-etl run /);
    expect(exec[0]).toContain(`--client-secret-file=\${CREDENTIALS_DIRECTORY}/${name}`);
    expect(values(service, 'Service', 'SuccessExitStatus').join(' ').split(/\s+/)).toContain('5');
    expect(values(service, 'Service', 'User')[0]).not.toMatch(/^(root|0)$/);
    const env = values(service, 'Service', 'Environment').map((e) => e.split('=')[0]!);
    expect(env).not.toContain('RECRUIT_ETL_CLIENT_SECRET');
    for (const n of env) expect(KNOWN_VARIABLES.has(n), n).toBe(true);
  });

  it('the timer starts the service every night', () => {
    expect(values(timer, 'Timer', 'Unit')).toEqual(['recruit-etl.service']);
    expect(values(timer, 'Timer', 'OnCalendar')).toHaveLength(1);
    expect(values(timer, 'Timer', 'Persistent')).toEqual(['true']);
    expect(values(timer, 'Install', 'WantedBy')).toEqual(['timers.target']);
  });

  it('systemd-analyze verify finds nothing to say (ExecStart pointed at an existing binary)', () => {
    const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (probe.error) {
      // No systemd on this machine: the parse checks above are what is tested.
      expect((probe.error as NodeJS.ErrnoException).code).toBe('ENOENT');
      return;
    }
    const tmp = tempDir();
    try {
      // verify checks that ExecStart's binary exists; the bin is not installed here.
      writeFileSync(
        join(tmp.dir, 'recruit-etl.service'),
        read('deploy/recruit-etl.service').replace(/^ExecStart=\S+/m, 'ExecStart=/bin/true'),
      );
      copyFileSync(join(ROOT, 'deploy/recruit-etl.timer'), join(tmp.dir, 'recruit-etl.timer'));
      const r = spawnSync('systemd-analyze', ['verify', join(tmp.dir, 'recruit-etl.service'), join(tmp.dir, 'recruit-etl.timer')], {
        encoding: 'utf8',
      });
      expect(r.stderr.trim()).toBe('');
      expect(r.status).toBe(0);
      // And it does complain: an unknown key is reported.
      writeFileSync(join(tmp.dir, 'bad.service'), '[Service]\nExecStart=/bin/true\nFrobnicate=1\n');
      expect(spawnSync('systemd-analyze', ['verify', join(tmp.dir, 'bad.service')], { encoding: 'utf8' }).stderr).toMatch(/Frobnicate/);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('Kubernetes CronJob (deploy/cronjob.yaml)', () => {
  type Obj = Record<string, unknown>;
  const doc = parse(read('deploy/cronjob.yaml')) as Obj;
  const spec = doc['spec'] as Obj;
  const pod = ((spec['jobTemplate'] as Obj)['spec'] as Obj)['template'] as Obj;
  const podSpec = pod['spec'] as Obj;
  const container = (podSpec['containers'] as Obj[])[0]!;

  it('a batch/v1 CronJob with a valid schedule and concurrencyPolicy Forbid', () => {
    expect(doc['apiVersion']).toBe('batch/v1');
    expect(doc['kind']).toBe('CronJob');
    expect(cronSchedule(String(spec['schedule']).split(' '))).toBe(true);
    expect(spec['concurrencyPolicy']).toBe('Forbid');
    expect(podSpec['restartPolicy']).toBe('Never');
    expect((podSpec['securityContext'] as Obj)['runAsNonRoot']).toBe(true);
  });

  it('the secret is a mounted Secret read with --client-secret-file, never an environment variable', () => {
    const args = container['args'] as string[];
    expect(args[0]).toBe('run');
    const file = args[args.indexOf('--client-secret-file') + 1]!;
    const volume = (podSpec['volumes'] as Obj[]).find((v) => v['secret'] !== undefined)!;
    const mount = (container['volumeMounts'] as Obj[]).find((m) => m['name'] === volume['name'])!;
    const item = ((volume['secret'] as Obj)['items'] as Obj[])[0]!;
    expect(file).toBe(`${String(mount['mountPath'])}/${String(item['path'])}`);
    expect(mount['readOnly']).toBe(true);
    const env = (container['env'] as Obj[]).map((e) => String(e['name']));
    expect(env).not.toContain('RECRUIT_ETL_CLIENT_SECRET');
    for (const n of env) expect(KNOWN_VARIABLES.has(n), n).toBe(true);
  });
});

describe('container image (Dockerfile)', () => {
  const lines = read('Dockerfile')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
  const from = lines.map((l, i) => [l, i] as const).filter(([l]) => /^FROM /i.test(l));
  const last = lines.slice(from[from.length - 1]![1]);

  it('multi-stage from node:20', () => {
    expect(from.length).toBeGreaterThanOrEqual(2);
    for (const [l] of from) expect(l).toMatch(/^FROM node:20[-\w.]*( AS \w+)?$/i);
    expect(last.some((l) => /^COPY --from=\w+ .*\/dist /.test(l))).toBe(true);
    expect(last.some((l) => /^COPY --from=\w+ .*\/sql /.test(l))).toBe(true);
  });

  it('runs as a non-root user with the bin as entry point', () => {
    const users = last.filter((l) => /^USER /.test(l)).map((l) => l.slice(5).trim());
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^(root|0)(:|$)/);
    const entry = last.filter((l) => /^ENTRYPOINT /.test(l));
    expect(entry).toHaveLength(1);
    const argv = JSON.parse(entry[0]!.slice('ENTRYPOINT '.length)) as string[];
    const bin = (JSON.parse(read('package.json')) as { bin: Record<string, string> }).bin['recruit-etl']!;
    expect(argv).toEqual([`/app/${bin}`]);
  });
});
