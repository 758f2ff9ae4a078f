/**
 * readInputFile checks the descriptor it reads, not only the path (src/fs/inputFile.ts;
 * docs/contracts.md "Input files"): while another process swaps a symlink between a regular
 * file and a FIFO as fast as it can, every read either returns the regular file's bytes or
 * refuses the FIFO (exit 2), and none blocks. Both sides are child processes of the built
 * module (dist/, `make build`), with deadlines: a read that blocked in open(2) would be
 * killed, failing the test.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const MODULE = join(ROOT, 'dist', 'fs', 'inputFile.js');
const READS = 20_000;

const tmp = tempDir('recruit-etl-race-');
afterAll(() => tmp.cleanup());

/** Swaps `link` between `file` and `fifo` by atomic renames until killed. */
const SWAPPER = `
const { renameSync, symlinkSync, rmSync } = require('node:fs');
const [dir] = process.argv.slice(1);
for (let i = 0; ; i++) {
  const tmp = dir + '/next-' + (i % 2);
  rmSync(tmp, { force: true });
  symlinkSync(i % 2 ? 'fifo' : 'file', tmp);
  renameSync(tmp, dir + '/link');
}
`;

/** Reads `link` READS times; prints the tally of outcomes. */
const READER = `
import(process.argv[1]).then(({ readInputFile }) => {
  const [link, n] = process.argv.slice(2);
  const tally = { read: 0, fifo: 0, other: [] };
  for (let i = 0; i < Number(n); i++) {
    try {
      const text = readInputFile(link, { option: '--x', maxBytes: 1024 }).toString();
      if (text === 'the regular file') tally.read++;
      else tally.other.push('read: ' + JSON.stringify(text));
    } catch (err) {
      if (/is a FIFO \\(named pipe\\), not a regular file$/.test(err.message) && err.exitCode === 2) tally.fifo++;
      else tally.other.push(err.message);
    }
  }
  console.log(JSON.stringify(tally));
});
`;

describe('readInputFile under a path swapped between a file and a FIFO', () => {
  it(`${READS} reads: each is the file's bytes or a FIFO refusal, none blocks`, async () => {
    expect(existsSync(MODULE), `${MODULE}: run make build`).toBe(true);
    writeFileSync(join(tmp.dir, 'file'), 'the regular file');
    execFileSync('mkfifo', [join(tmp.dir, 'fifo')]);
    symlinkSync('file', join(tmp.dir, 'link'));
    const swapper = spawn(process.execPath, ['-e', SWAPPER, tmp.dir], { stdio: 'ignore' });
    try {
      // The reader starts once the swapper is swapping (a loaded machine starts it slowly).
      const deadline = Date.now() + 20_000;
      let swapping = false;
      while (!swapping && Date.now() < deadline) {
        swapping = readlinkSync(join(tmp.dir, 'link')) === 'fifo';
        if (!swapping) await new Promise((r) => setTimeout(r, 10));
      }
      expect(swapping, 'the swapper never pointed the link at the FIFO in 20 s').toBe(true);
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', READER, MODULE, join(tmp.dir, 'link'), String(READS)], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.signal, 'a read blocked: the reader was killed at its deadline').toBeNull();
      expect(r.stderr).toBe('');
      const tally = JSON.parse(r.stdout) as { read: number; fifo: number; other: string[] };
      expect(tally.other).toEqual([]);
      expect(tally.read + tally.fifo).toBe(READS);
      expect(tally.read).toBeGreaterThan(0);
      expect(tally.fifo).toBeGreaterThan(0);
    } finally {
      swapper.kill('SIGKILL');
    }
  });
});
