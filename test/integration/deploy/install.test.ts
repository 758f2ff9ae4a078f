/**
 * deploy/install.sh run into a scratch root (DESTDIR), the steps docs/scheduling.md "Rollout from
 * zero" walks, then what it installed tried with the real parts: Debian's `systemd-analyze verify`
 * (systemd 252) on the units inside that root, Debian cron's `crontab -n` (cron 3.0pl1) on the
 * crontab, the crontab's job line executed by /bin/sh as the job's user, and the installed command
 * run with the unit's settings. Then the same script on the machine itself (DESTDIR empty) inside a
 * private mount namespace whose /etc, /var and /usr/local are overlays: useradd, dpkg-statoverride
 * and `crontab -u` for real, the crontab read back. Runs as root (useradd, chown, unshare), as CI does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const SCRIPT = join(ROOT, 'deploy', 'install.sh');
const SECRET = 'install-test-client-secret';
const tmp = tempDir('recruit-etl-install-');
const root = join(tmp.dir, 'root');
const at = (p: string): string => join(root, p);

function install(args: string[] = [], input = ''): SpawnSyncReturns<string> {
  return spawnSync('sh', [SCRIPT, ...args], { env: { ...process.env, DESTDIR: root }, input, encoding: 'utf8', timeout: 180_000 });
}

/** Every path under the root with its type, mode, owner and size (or link target); contents of etc/. */
function snapshot(dir = root, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = lstatSync(p);
    const rel = p.slice(root.length);
    const what = st.isSymbolicLink() ? `-> ${readlinkSync(p)}` : st.isFile() ? String(st.size) : 'dir';
    out.push(`${rel} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ${what}`);
    if (st.isFile() && rel.startsWith('/etc/')) out.push(readFileSync(p, 'utf8'));
    if (st.isDirectory()) snapshot(p, out);
  }
  return out;
}

/** `KEY=VALUE` lines of one section of a unit file (repeated keys in order). */
function unitValues(text: string, key: string): string[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));
}

/** The folders a unit's run writes into that `ReadWritePaths=` / `StateDirectory=` do not open: none when its sandbox fits. */
function blockedWrites(unitText: string): string[] {
  const env = new Map(unitValues(unitText, 'Environment').map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as const));
  const open = [
    ...unitValues(unitText, 'ReadWritePaths').flatMap((v) => v.split(/\s+/)),
    ...unitValues(unitText, 'StateDirectory').map((d) => `/var/lib/${d}`),
  ].map((p) => p.replace(/^-/, ''));
  const writes = [
    dirname(env.get('RECRUIT_ETL_DB') ?? ''),
    env.get('RECRUIT_ETL_EXPORT_DIR') ?? '',
    dirname(env.get('RECRUIT_ETL_METRICS_FILE') ?? ''),
  ];
  return writes.filter((w) => !open.some((o) => w === o || w.startsWith(`${o}/`)));
}

/** A path of the installed recipes moved into the scratch root. */
const reroot = (value: string): string =>
  value.replace(/(^|[\s:=>])(\/(?:etc|var|usr\/local)\/)/g, (_m, pre: string, p: string) => `${pre}${root}${p}`);

let first: SpawnSyncReturns<string>;
let uid = -1;
let gid = -1;

beforeAll(() => {
  chmodSync(tmp.dir, 0o755); // the job's user must reach into the root, as on a machine
  first = install(['--secret-stdin'], `${SECRET}\n`);
  const passwd = readFileSync(at('etc/passwd'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('recruit-etl:'));
  if (passwd) [uid, gid] = passwd.split(':').slice(2, 4).map(Number) as [number, number];
}, 180_000);

// Four installed trees (about 200 MB, thousands of files each): rm -rf, given time on a loaded machine.
afterAll(() => {
  spawnSync('rm', ['-rf', tmp.dir], { timeout: 170_000 });
}, 180_000);

describe('deploy/install.sh into a scratch root', () => {
  it('runs the steps of docs/scheduling.md "Rollout from zero", in that order, and exits 0', () => {
    expect(first.stderr).not.toMatch(/error/);
    expect(first.status).toBe(0);
    const steps = [...first.stderr.matchAll(/^install\.sh: step (\d+): (.*)$/gm)].map((m) => `Step ${m[1]}: ${m[2]}`);
    expect(steps).toHaveLength(7);
    const doc = readFileSync(join(ROOT, 'docs/scheduling.md'), 'utf8');
    const headings = [...doc.matchAll(/^### (Step \d+: .*)$/gm)].map((m) => m[1]!.replaceAll('`', ''));
    expect(headings).toEqual(steps);
    expect(first.stderr).toContain('would run: dpkg-statoverride --update --add root recruit-etl 1775 /var/lib/prometheus/node-exporter');
  });

  it('creates the system user and group in the root only (useradd --prefix), locked, no shell', () => {
    expect(uid).toBeGreaterThan(0);
    expect(uid).toBeLessThan(1000); // a system account
    const line = readFileSync(at('etc/passwd'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('recruit-etl:'))!;
    expect(line.split(':').slice(5)).toEqual(['/var/lib/recruit-etl', '/usr/sbin/nologin']);
    expect(readFileSync(at('etc/group'), 'utf8')).toMatch(new RegExp(`^recruit-etl:x:${gid}:$`, 'm'));
    expect(readFileSync(at('etc/shadow'), 'utf8')).toMatch(/^recruit-etl:!/m);
    expect(spawnSync('getent', ['passwd', 'recruit-etl']).status).not.toBe(0); // the machine's own accounts untouched
  });

  it("owners and modes: config root-owned and group-readable, state and log the job's, textfile directory group-writable", () => {
    const expected: [string, number, number, number][] = [
      ['etc/recruit-etl', 0o750, 0, gid],
      ['etc/recruit-etl/config.json', 0o640, 0, gid],
      ['etc/recruit-etl/client-secret', 0o640, 0, gid],
      ['etc/recruit-etl/crontab', 0o640, 0, gid],
      ['var/lib/recruit-etl', 0o750, uid, gid],
      ['var/log/recruit-etl', 0o750, uid, gid],
      ['var/lib/prometheus/node-exporter', 0o1775, 0, gid],
      ['etc/systemd/system/recruit-etl.service', 0o644, 0, 0],
      ['etc/systemd/system/recruit-etl.timer', 0o644, 0, 0],
      ['usr/local/lib/recruit-etl/dist/cli.js', 0o755, 0, 0],
    ];
    for (const [p, mode, u, g] of expected) {
      const st = lstatSync(at(p));
      expect([p, (st.mode & 0o7777).toString(8), st.uid, st.gid]).toEqual([p, mode.toString(8), u, g]);
    }
    expect(readFileSync(at('etc/recruit-etl/client-secret'), 'utf8')).toBe(`${SECRET}\n`);
    expect(readdirSync(at('etc/recruit-etl')).sort()).toEqual(['client-secret', 'config.json', 'crontab']); // no temporary file left
  });

  it("the job's user can write the metrics folder and read its config and secret, not change them", () => {
    const asJob = (cmd: string) => spawnSync('sh', ['-c', cmd], { uid, gid, encoding: 'utf8', timeout: 10_000 });
    expect(asJob(`echo x > ${at('var/lib/prometheus/node-exporter/probe.prom')}`).status).toBe(0);
    rmSync(at('var/lib/prometheus/node-exporter/probe.prom'));
    expect(asJob(`cat ${at('etc/recruit-etl/client-secret')} ${at('etc/recruit-etl/config.json')}`).status).toBe(0);
    expect(asJob(`echo x > ${at('etc/recruit-etl/config.json')}`).stderr).toMatch(/Permission denied/);
    expect(asJob(`echo x > ${at('etc/recruit-etl/new')}`).stderr).toMatch(/Permission denied/);
  });

  it('installs the application under PREFIX with a relative bin link that runs', () => {
    expect(readlinkSync(at('usr/local/bin/recruit-etl'))).toBe('../lib/recruit-etl/dist/cli.js');
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const r = spawnSync(at('usr/local/bin/recruit-etl'), ['--version'], { encoding: 'utf8', timeout: 30_000 });
    expect(r.stdout.trim()).toBe(version);
    expect(existsSync(at('usr/local/lib/recruit-etl/node_modules/@duckdb/node-api'))).toBe(true);
    expect(existsSync(at('usr/local/lib/recruit-etl/node_modules/vitest'))).toBe(false); // production dependencies only
  });

  it('a second run changes nothing and keeps the secret; --config replaces the options; an empty secret on stdin is refused', () => {
    const before = snapshot();
    const again = install();
    expect(again.status).toBe(0);
    expect(snapshot()).toEqual(before);
    const cfg = join(tmp.dir, 'config.json');
    writeFileSync(cfg, '{ "base-url": "https://api.example.org" }\n');
    expect(install(['--config', cfg]).status).toBe(0);
    expect(readFileSync(at('etc/recruit-etl/config.json'), 'utf8')).toContain('api.example.org');
    const empty = install(['--secret-stdin'], '');
    expect(empty.status).toBe(1);
    expect(empty.stderr).toMatch(/install\.sh: error: the secret on stdin is empty/);
    expect(readFileSync(at('etc/recruit-etl/client-secret'), 'utf8')).toBe(`${SECRET}\n`);
  }, 180_000);

  it('in a scratch root the scheduler is only named (would run: ...); bad arguments stop before any change', () => {
    const systemd = install(['--scheduler', 'systemd']);
    expect(systemd.status).toBe(0);
    expect(systemd.stderr).toContain('would run: systemctl enable --now recruit-etl.timer');
    const cron = install(['--scheduler=cron']);
    expect(cron.status).toBe(0);
    expect(cron.stderr).toContain('would run: crontab -u recruit-etl /etc/recruit-etl/crontab');
    const before = snapshot();
    for (const [args, env, message] of [
      [['--scheduler', 'anacron'], {}, /--scheduler must be systemd, cron or none/],
      [['--config', join(tmp.dir, 'none.json')], {}, /--config .* is not a file/],
      [[], { PREFIX: 'opt' }, /PREFIX must be an absolute path/],
      [[], { TEXTFILE_DIR: '/var/lib/a|b' }, /may hold only letters/],
    ] as const) {
      const r = spawnSync('sh', [SCRIPT, ...args], { env: { ...process.env, DESTDIR: root, ...env }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/step 1/);
    }
    expect(snapshot()).toEqual(before);
  }, 180_000);
});

describe('deploy/install.sh with PREFIX and TEXTFILE_DIR', () => {
  it('writes them into the units and the crontab, and systemd-analyze verify accepts the result', () => {
    const other = join(tmp.dir, 'other');
    const r = spawnSync('sh', [SCRIPT], {
      env: { ...process.env, DESTDIR: other, PREFIX: '/opt/recruit-etl', TEXTFILE_DIR: '/srv/textfile' },
      encoding: 'utf8',
      timeout: 180_000,
    });
    expect(r.status).toBe(0);
    expect(readlinkSync(join(other, 'opt/recruit-etl/bin/recruit-etl'))).toBe('../lib/recruit-etl/dist/cli.js');
    const unit = readFileSync(join(other, 'etc/systemd/system/recruit-etl.service'), 'utf8');
    expect(unitValues(unit, 'ExecStart')[0]).toMatch(/^\/opt\/recruit-etl\/bin\/recruit-etl run /);
    expect(unitValues(unit, 'ReadWritePaths')).toEqual(['/var/lib/recruit-etl /srv/textfile']);
    expect(blockedWrites(unit)).toEqual([]);
    for (const u of ['recruit-etl.service', 'recruit-etl.timer']) {
      const doc = unitValues(readFileSync(join(other, 'etc/systemd/system', u), 'utf8'), 'Documentation')[0]!;
      expect(existsSync(join(other, doc.replace(/^file:\/\//, ''))), doc).toBe(true);
    }
    const cron = readFileSync(join(other, 'etc/recruit-etl/crontab'), 'utf8');
    expect(cron).toMatch(/^PATH=\/opt\/recruit-etl\/bin:\/usr\/bin:\/bin$/m);
    expect(cron).toMatch(/^RECRUIT_ETL_METRICS_FILE=\/srv\/textfile\/recruit_etl\.prom$/m);
    expect(lstatSync(join(other, 'srv/textfile')).gid).toBe(lstatSync(join(other, 'var/lib/recruit-etl')).gid);
    cpSync('/usr/lib/systemd/system', join(other, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
    const v = spawnSync('systemd-analyze', ['verify', `--root=${other}`, 'recruit-etl.service', 'recruit-etl.timer'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(v.stderr.trim()).toBe('');
    expect(v.status).toBe(0);
  }, 180_000);
});

describe('deploy/install.sh on the machine itself (DESTDIR empty), in a private mount namespace', () => {
  it('useradd, dpkg-statoverride and crontab -u act on /etc, /var and /usr/local overlaid for the test only', () => {
    const work = join(tmp.dir, 'overlay');
    // unshare(1) gives the shell its own mount table: the overlays and all the script writes
    // vanish with it, the machine's /etc, /var and /usr/local are never written.
    const inner = [
      'set -eu',
      ...['etc', 'var', 'usr/local'].map((d) => {
        const n = `${work}/${d.replace('/', '_')}`;
        return `mkdir -p ${n}/u ${n}/w && mount -t overlay overlay -o lowerdir=/${d},upperdir=${n}/u,workdir=${n}/w /${d}`;
      }),
      `echo ${SECRET} | sh ${SCRIPT} --secret-stdin --scheduler cron 2>/dev/null`,
      'echo "passwd=$(getent passwd recruit-etl)"',
      'echo "override=$(dpkg-statoverride --list /var/lib/prometheus/node-exporter)"',
      'echo "spool=$(stat -c "%a %U:%G" /var/spool/cron/crontabs/recruit-etl)"',
      'crontab -u recruit-etl -l | grep -v "^#" | grep . | sed "s/^/crontab=/"',
      'echo "version=$(/usr/local/bin/recruit-etl --version)"',
    ].join('\n');
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', inner], { encoding: 'utf8', timeout: 180_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = r.stdout.split('\n');
    expect(out.find((l) => l.startsWith('passwd='))).toMatch(
      /^passwd=recruit-etl:x:\d+:\d+:recruit-etl nightly job:\/var\/lib\/recruit-etl:\/usr\/sbin\/nologin$/,
    );
    expect(out).toContain('override=root recruit-etl 1775 /var/lib/prometheus/node-exporter');
    expect(out).toContain('spool=600 recruit-etl:crontab'); // what Debian's crontab -u wrote, read back by crontab -l
    expect(out.filter((l) => l.startsWith('crontab='))).toEqual(
      readFileSync(at('etc/recruit-etl/crontab'), 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => `crontab=${l}`),
    );
    expect(out).toContain(`version=${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}`);
    // The machine itself is as it was.
    expect(spawnSync('getent', ['passwd', 'recruit-etl']).status).not.toBe(0);
    expect(existsSync('/etc/recruit-etl')).toBe(false);
  }, 180_000);
});

describe('the installed systemd units (Debian systemd 252, systemd-analyze verify --root)', () => {
  beforeAll(() => {
    // The root needs systemd's own units (sysinit.target, timers.target, ...): Debian's, from the machine.
    cpSync('/usr/lib/systemd/system', at('usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
  });

  it('verify finds nothing to say, ExecStart resolved inside the root; a broken unit is reported', () => {
    const v = spawnSync('systemd-analyze', ['verify', `--root=${root}`, 'recruit-etl.service', 'recruit-etl.timer'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(v.stderr.trim()).toBe('');
    expect(v.status).toBe(0);
    const unit = readFileSync(at('etc/systemd/system/recruit-etl.service'), 'utf8');
    writeFileSync(
      at('etc/systemd/system/broken.service'),
      unit.replace('/usr/local/bin/recruit-etl', '/usr/local/bin/recruit-etI').replace('[Service]', '[Service]\nFrobnicate=1'),
    );
    try {
      const bad = spawnSync('systemd-analyze', ['verify', `--root=${root}`, 'broken.service'], { encoding: 'utf8', timeout: 60_000 });
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/Unknown key 'Frobnicate'/);
      expect(bad.stderr).toMatch(/recruit-etI is not executable/);
    } finally {
      rmSync(at('etc/systemd/system/broken.service'));
    }
  });

  it('the sandbox (ProtectSystem=strict) opens every folder the run writes, and each exists', () => {
    const unit = readFileSync(at('etc/systemd/system/recruit-etl.service'), 'utf8');
    expect(unitValues(unit, 'ProtectSystem')).toEqual(['strict']);
    expect(blockedWrites(unit)).toEqual([]);
    for (const p of unitValues(unit, 'ReadWritePaths').flatMap((v) => v.split(/\s+/))) expect(existsSync(at(p)), p).toBe(true);
    expect(unitValues(unit, 'Environment')).toContain('RECRUIT_ETL_METRICS_FILE=/var/lib/prometheus/node-exporter/recruit_etl.prom');
    // The check can fail: the unit as it was, with the state directory only.
    expect(blockedWrites(unit.replace(/^ReadWritePaths=.*$/m, 'ReadWritePaths=/var/lib/recruit-etl'))).toEqual([
      '/var/lib/prometheus/node-exporter',
    ]);
  });

  it("the command with the unit's environment reads config.json (its empty options are named, exit 2)", () => {
    const unit = readFileSync(at('etc/systemd/system/recruit-etl.service'), 'utf8');
    const env = Object.fromEntries(
      unitValues(unit, 'Environment').map((e) => [e.slice(0, e.indexOf('=')), reroot(e.slice(e.indexOf('=') + 1))]),
    );
    const [bin, ...args] = unitValues(unit, 'ExecStart')[0]!.replace('${CREDENTIALS_DIRECTORY}', '/etc/recruit-etl').split(' ');
    const r = spawnSync(at(bin!), args.map(reroot), { env: { PATH: '/usr/bin:/bin', ...env }, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/missing required option\(s\): --auth-url \(RECRUIT_ETL_AUTH_URL\), --client-id/);
    expect(r.stderr).not.toContain('--base-url'); // set by the --config of the test above
    expect(r.stderr + r.stdout).not.toContain(SECRET);
  });
});

describe('the installed crontab (Debian cron 3.0pl1)', () => {
  const crontab = (): string => readFileSync(at('etc/recruit-etl/crontab'), 'utf8');

  it('crontab -n accepts it and refuses a broken one', () => {
    const ok = spawnSync('crontab', ['-n', at('etc/recruit-etl/crontab')], { encoding: 'utf8', timeout: 10_000 });
    expect(ok.status).toBe(0);
    expect(ok.stdout + ok.stderr).toMatch(/successfully checked/);
    const bad = join(tmp.dir, 'crontab.bad');
    writeFileSync(bad, crontab().replace(/^15 \* /m, '15 24 '));
    const r = spawnSync('crontab', ['-n', bad], { encoding: 'utf8', timeout: 10_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/bad hour/);
  });

  it("Debian's cron has no CRON_TZ: the crontab does not rely on it", () => {
    expect(readFileSync('/usr/sbin/cron').includes('CRON_TZ')).toBe(false);
    expect(crontab()).not.toMatch(/^CRON_TZ=/m);
  });

  it("its job line, run by /bin/sh as the job's user with its variables, starts the job only in the 02 UTC hour", () => {
    const lines = crontab()
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    const env: Record<string, string> = { HOME: at('var/lib/recruit-etl'), LOGNAME: 'recruit-etl' };
    for (const l of lines.filter((x) => /^[A-Z_]+=/.test(x))) env[l.slice(0, l.indexOf('='))] = reroot(l.slice(l.indexOf('=') + 1));
    const job = lines.find((l) => !/^[A-Z_]+=/.test(l))!;
    expect(job.split(/\s+/).slice(0, 5)).toEqual(['15', '*', '*', '*', '*']);
    // cron hands the command to SHELL with `\%` turned into `%`.
    const command = reroot(job.split(/\s+/).slice(5).join(' ').replaceAll('\\%', '%'));
    expect(command).toMatch(/^\[ "\$\(date -u \+%H\)" = 02 \] && recruit-etl run >> \S+\/var\/log\/recruit-etl\/run\.log 2>&1$/);
    const log = at('var/log/recruit-etl/run.log');
    const runAt = (hour: number) =>
      spawnSync(env['SHELL']!, ['-c', command.replace('= 02 ]', `= ${String(hour).padStart(2, '0')} ]`)], {
        env: { ...env, TZ: 'Pacific/Chatham' },
        uid,
        gid,
        encoding: 'utf8',
        timeout: 60_000,
      });
    const now = new Date().getUTCHours();
    expect(runAt((now + 12) % 24).status).toBe(1); // another hour: nothing runs
    expect(existsSync(log)).toBe(false);
    const r = runAt(now);
    const text = readFileSync(log, 'utf8');
    expect(r.status).toBe(2); // the job ran and named the options config.json leaves empty
    expect(text).toMatch(/recruit-etl: error: missing required option\(s\): --auth-url/);
    expect(text).not.toContain(SECRET);
    expect(lstatSync(log).uid).toBe(uid);
  });
});
