/**
 * A private PostgreSQL cluster for the lake's tests (docs/lakehouse.md "Tests"): `initdb` in a
 * temporary folder, `pg_ctl` on a free loopback port with its unix socket in that folder, trust
 * authentication on loopback only, stopped and removed by {@link PgCluster.stop}. No mock: the
 * DuckLake catalog lives in a real server.
 *
 * The binaries come from `PG_BIN` (the Makefile sets it), else `pg_config --bindir`, else
 * `/usr/lib/postgresql/15/bin`. initdb refuses to run as root: under root the cluster's files
 * belong to the `postgres` user (or `nobody`) and the server runs as that user via `runuser`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running private cluster. */
export interface PgCluster {
  /** Loopback TCP port. */
  port: number;
  /** Superuser and database owner (trust authentication on loopback). */
  user: string;
  /** The temporary folder: data directory, socket, log. */
  dir: string;
  /** libpq keyword/value connection string of `dbname` on this cluster. */
  conninfo(dbname: string): string;
  /** Create a database (owned by {@link user}). */
  createDb(name: string): void;
  /** Stop the server (immediate) and remove the folder. Idempotent. */
  stop(): void;
}

/** The folder holding initdb, pg_ctl and createdb. */
export function pgBinDir(): string {
  const fromEnv = process.env['PG_BIN'];
  const candidates: string[] = fromEnv ? [fromEnv] : [];
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // pg_config is not always on PATH (Debian keeps the server binaries out of it).
  }
  candidates.push('/usr/lib/postgresql/15/bin');
  const dir = candidates.find((d) => d !== '' && existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  if (dir === undefined) {
    throw new Error(
      `PostgreSQL server binaries (initdb, pg_ctl) not found in ${candidates.join(', ')}: install postgresql-15 or set PG_BIN`,
    );
  }
  return dir;
}

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The unprivileged OS user the server runs as when we are root. */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    if (r.status !== 0) continue;
    const uid = Number(r.stdout.trim());
    const gid = Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim());
    return { name, uid, gid };
  }
  throw new Error('running as root and neither the postgres nor the nobody user exists: initdb refuses root');
}

/**
 * Start a private cluster. Throws with the server log's tail when it does not come up.
 */
export async function startPostgres(): Promise<PgCluster> {
  const bin = pgBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'recruit-etl-pg-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const user = 'recruit';
  const runAs = serverUser();
  if (runAs) {
    chownSync(dir, runAs.uid, runAs.gid);
    chmodSync(dir, 0o700);
  }
  const exec = (cmd: string, args: string[]): void => {
    const [file, argv] = runAs ? ['runuser', ['-u', runAs.name, '--', join(bin, cmd), ...args]] : [join(bin, cmd), args];
    const r = spawnSync(file, argv, { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${(r.stderr || r.stdout).slice(-2000)}`);
  };
  const port = await freePort();
  let started = false;
  const stop = (): void => {
    if (started) {
      started = false;
      try {
        exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Already gone; the folder goes anyway.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(data, { mode: 0o700 });
    if (runAs) chownSync(data, runAs.uid, runAs.gid);
    exec('initdb', ['-D', data, '-U', user, '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    // Loopback only, the socket in our folder (never /var/run/postgresql), no fsync (test data).
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
    exec('pg_ctl', ['-D', data, '-o', opts, '-l', log, '-w', '-t', '60', 'start']);
    started = true;
  } catch (err) {
    const tail = existsSync(log) ? spawnSync('tail', ['-n', '20', log], { encoding: 'utf8' }).stdout : '';
    stop();
    throw new Error(`${(err as Error).message}\n${tail}`);
  }
  return {
    port,
    user,
    dir,
    conninfo: (dbname) => `dbname=${dbname} host=127.0.0.1 port=${port} user=${user}`,
    createDb: (name) => exec('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', user, name]),
    stop,
  };
}
