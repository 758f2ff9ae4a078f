/**
 * The simulator's own bin (packages/mock-api/dist/cli.js, `npx mock-api`): its options from
 * flags, `RECRUIT_ETL_*` variables and a `--config` file by precedence; one "listening" line;
 * SIGTERM stops it with exit 0; a bad flag or value is exit 2 in one line.
 */
import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const BIN = join(ROOT, 'packages', 'mock-api', 'dist', 'cli.js');
const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RECRUIT_ETL_') && v !== undefined) env[k] = v;
  return env;
};

/** Starts the bin, waits for its listening line, stops it with SIGTERM: the line and the exit code. */
function serveOnce(args: string[], env: Record<string, string>): Promise<{ line: Record<string, unknown>; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    let out = '';
    let line: Record<string, unknown> | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const found = out.split('\n').find((l) => l.includes('"mockApi":"listening"'));
      if (found !== undefined && line === undefined) {
        line = JSON.parse(found) as Record<string, unknown>;
        child.kill('SIGTERM');
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (line === undefined) reject(new Error(`no listening line (exit ${String(code)}): ${out}`));
      else resolve({ line, code });
    });
  });
}

describe('mock-api, the bin of packages/mock-api', () => {
  it('flags over variables over the --config file; SIGTERM is exit 0', async () => {
    expect(existsSync(BIN), 'make build first').toBe(true);
    const tmp = tempDir('mock-api-cli-');
    try {
      const file = join(tmp.dir, 'sim.json');
      writeFileSync(file, JSON.stringify({ trials: 3, 'microsite-id': 'ms-file', 'client-id': 'from-file', db: 'the job reads this one' }));
      const { line, code } = await serveOnce(['--port', '0', '--client-id', 'from-flag', '--log-level', 'warn'], {
        RECRUIT_ETL_CONFIG: file,
        RECRUIT_ETL_MICROSITE_ID: 'ms-env',
        RECRUIT_ETL_CLIENT_ID: 'from-env',
      });
      expect(code).toBe(0);
      expect(line['trialIds']).toEqual(['TRIAL-001', 'TRIAL-002', 'TRIAL-003']);
      expect(line['micrositeId']).toBe('ms-env');
      expect(line['clientId']).toBe('from-flag');
      expect(line['baseUrl']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      tmp.cleanup();
    }
  });

  it('a bad flag, variable or fault is exit 2 in one line', () => {
    const cases: Array<[string[], Record<string, string>, string]> = [
      [['--bogus'], {}, 'mock-api: error: Unknown argument: bogus'],
      [['--port', '0'], { RECRUIT_ETL_SEED: 'x' }, 'mock-api: error: --seed (RECRUIT_ETL_SEED): not a number'],
      [['--port', '0', '--fault', 'events:explode'], {}, 'mock-api: error: invalid fault spec "events:explode"'],
      [['--port', '0', '--grow-events', '3'], {}, 'mock-api: error: --grow-events needs --grow-every-ms'],
      [['--port', '0', '--log-level', 'loud'], {}, 'mock-api: error: --log-level (RECRUIT_ETL_LOG_LEVEL): must be one of'],
    ];
    for (const [args, env, start] of cases) {
      const r = spawnSync(process.execPath, [BIN, ...args], { env: { ...cleanEnv(), ...env }, encoding: 'utf8', timeout: 20_000 });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr.startsWith(start), r.stderr).toBe(true);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('--help lists the flags with their variables, and the faults', () => {
    const r = spawnSync(process.execPath, [BIN, '--help'], { env: cleanEnv(), encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('--synthetic-events');
    expect(r.stdout.replace(/\s+/g, ' ')).toContain('[env RECRUIT_ETL_SITES_PER_TRIAL]');
    expect(r.stdout).toContain('padEvents=<bytes>');
  });
});
