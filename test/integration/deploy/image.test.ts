/**
 * The production image holds no simulator (README.md "The simulator"): the job's dist/ has no
 * simulator file and loads `@recruit-etl/mock-api` only by a dynamic import; the Dockerfile's
 * runtime stage copies nothing of packages/mock-api; and the image's install steps, replayed in
 * a scratch folder with the real npm (`npm ci --omit=dev --offline` where the Dockerfile's
 * deps stage runs it, with the same files), leave node_modules/@recruit-etl/mock-api and the
 * simulator's own dependencies out, so that `recruit-etl mock-api` is exit 2 saying so while
 * the job itself still runs (`transform` on a new warehouse). Docker is not needed: the files the stages copy are copied by hand.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const DIST = join(ROOT, 'dist');
const tmp = tempDir('recruit-etl-image-');

/** Every .js file under `dir`. */
function jsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) jsFiles(p, out);
    else if (p.endsWith('.js')) out.push(p);
  }
  return out;
}

/** The stages of the Dockerfile: name (or index) → its lines. */
function stages(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n')) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) out.set(from[1] ?? `#${out.size}`, (current = []));
    current.push(line);
  }
  return out;
}

afterAll(() => tmp.cleanup());

describe('the production image has no simulator', () => {
  it("dist/ of the job: no simulator file, the package named only by the dynamic import's constant", () => {
    expect(existsSync(join(DIST, 'cli.js')), 'make build first').toBe(true);
    const files = jsFiles(DIST);
    expect(files.length).toBeGreaterThan(50);
    expect(files.filter((f) => /simulator|mock-api\/|mockApiFlags/.test(relative(DIST, f)))).toEqual([]);
    const naming = files.filter((f) => readFileSync(f, 'utf8').includes('@recruit-etl/mock-api')).map((f) => relative(DIST, f));
    expect(naming).toEqual(['cli/commands/mockApi.js']);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      expect(text, f).not.toMatch(/^\s*import\s[^;]*from\s+['"][^'"]*(simulator|mock-api)[^'"]*['"]/m);
      expect(text, f).not.toMatch(/^\s*export\s[^;]*from\s+['"][^'"]*(simulator|mock-api)[^'"]*['"]/m);
    }
    for (const f of naming) expect(readFileSync(join(DIST, f), 'utf8'), f).toMatch(/await import\(MOCK_API_PACKAGE\)/);
  });

  it("the Dockerfile's runtime stage copies nothing of packages/mock-api; its node_modules come from the stage without it", () => {
    const all = stages();
    const runtime = [...all.values()].at(-1)!;
    const copies = runtime.filter((l) => /^COPY\b/.test(l));
    expect(copies.length).toBeGreaterThan(3);
    for (const c of copies) expect(c).not.toMatch(/mock-api|\/build\/packages\s|\/build\/packages\/?$/);
    expect(copies.some((c) => /--from=deps\b.*\/build\/node_modules/.test(c))).toBe(true);
    const deps = all.get('deps')!;
    expect(deps.join('\n')).not.toContain('mock-api');
    expect(deps.join('\n')).toMatch(/npm ci --omit=dev/);
  });

  it('the image install steps replayed: no @recruit-etl/mock-api, no jose; mock-api is exit 2 naming the missing package', () => {
    const app = join(tmp.dir, 'app');
    mkdirSync(join(app, 'packages', 'event-types'), { recursive: true });
    // The deps stage: the lock, the root's and packages/event-types' package.json only.
    for (const f of ['package.json', 'package-lock.json']) cpSync(join(ROOT, f), join(app, f));
    cpSync(join(ROOT, 'packages/event-types/package.json'), join(app, 'packages/event-types/package.json'));
    const ci = spawnSync('npm', ['ci', '--omit=dev', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: app,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(ci.status, ci.stderr).toBe(0);
    expect(existsSync(join(app, 'node_modules/@recruit-etl/event-types'))).toBe(true);
    expect(existsSync(join(app, 'node_modules/@recruit-etl/mock-api'))).toBe(false);
    expect(existsSync(join(app, 'node_modules/jose')), 'the simulator-only dependency').toBe(false);
    expect(existsSync(join(app, 'node_modules/yargs'))).toBe(true);
    // The runtime stage's copies from the build stage (the binaries of DuckDB are the machine's: --ignore-scripts is enough here).
    cpSync(DIST, join(app, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'packages/event-types/dist'), join(app, 'packages/event-types/dist'), { recursive: true });
    cpSync(join(ROOT, 'sql'), join(app, 'sql'), { recursive: true });
    const run = (args: string[]) =>
      spawnSync(process.execPath, [join(app, 'dist/cli.js'), ...args], {
        cwd: tmp.dir,
        encoding: 'utf8',
        timeout: 30_000,
        env: { PATH: process.env['PATH'] },
      });
    const sim = run(['mock-api', '--port', '0']);
    expect(sim.status, sim.stderr).toBe(2);
    expect(sim.stderr.trim()).toBe(
      'recruit-etl: error: mock-api: the simulator (@recruit-etl/mock-api) is a development package, not in this install (run it from a clone of the repository after npm ci, as make demo does)',
    );
    // Installed but not built (make clean): not "not in this install", but what to do.
    const unbuilt = join(app, 'node_modules/@recruit-etl/mock-api');
    mkdirSync(unbuilt, { recursive: true });
    cpSync(join(ROOT, 'packages/mock-api/package.json'), join(unbuilt, 'package.json'));
    const notBuilt = run(['mock-api', '--port', '0']);
    expect(notBuilt.status, notBuilt.stderr).toBe(2);
    expect(notBuilt.stderr).toMatch(
      /^recruit-etl: error: mock-api: the simulator \(@recruit-etl\/mock-api\) cannot be loaded: .*\(build it: npm run build \(or make build\)\)\n$/,
    );
    rmSync(unbuilt, { recursive: true });
    const help = run(['--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('recruit-etl status');
    // The job runs from that install (DuckDB, sql/, the event-type names): the models on a new warehouse.
    const transform = run(['transform', '--db', join(tmp.dir, 'w.duckdb'), '--log-level', 'warn']);
    expect(transform.status, transform.stderr).toBe(0);
    expect(existsSync(join(tmp.dir, 'w.duckdb'))).toBe(true);
    // The options are the job's, as in a clone: a key of the simulator's in a --config file is exit 2 in both.
    const config = join(tmp.dir, 'sim-key.json');
    writeFileSync(config, '{"seed": 3}');
    for (const cli of [join(app, 'dist/cli.js'), join(DIST, 'cli.js')]) {
      const r = spawnSync(process.execPath, [cli, 'transform', '--db', join(tmp.dir, 'w.duckdb'), '--config', config], {
        cwd: tmp.dir,
        encoding: 'utf8',
        timeout: 30_000,
        env: { PATH: process.env['PATH'] },
      });
      expect(r.status, `${cli}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain('unknown option(s): "seed"');
    }
  });
});
