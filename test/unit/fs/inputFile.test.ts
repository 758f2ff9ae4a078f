/**
 * src/fs/inputFile.ts: an input file is a regular file (a symlink to one is fine) of at most
 * its size; FIFOs, devices, sockets and folders are refused with exit 2 naming the option,
 * and nothing blocks (issue 26 "Special files", docs/contracts.md "Input files").
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { checkInputFile, INPUT_FILE_MAX_BYTES, readInputFile } from '../../../src/fs/inputFile.js';
import { tempDir } from '../../helpers/tmp.js';

const tmp = tempDir('recruit-etl-input-');
afterAll(() => tmp.cleanup());

const OPT = { option: '--thing (RECRUIT_ETL_THING)', maxBytes: 1024 };

function refusal(path: string, o = OPT): ConfigError {
  try {
    readInputFile(path, o);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).exitCode).toBe(2);
    expect((err as Error).message.startsWith(`${o.option}: `)).toBe(true);
    return err as ConfigError;
  }
  throw new Error(`${path} was read`);
}

describe('readInputFile', () => {
  it('reads a regular file, and one behind a chain of symlinks (a Kubernetes secret volume)', () => {
    const file = join(tmp.dir, 'plain');
    writeFileSync(file, 'S3CRET\n');
    expect(readInputFile(file, OPT).toString()).toBe('S3CRET\n');
    // Kubernetes: <vol>/client-secret → ..data/client-secret, ..data → ..2026_11_27_…/
    const vol = join(tmp.dir, 'vol');
    mkdirSync(join(vol, '..2026_11_27_04_00_00.1'), { recursive: true });
    writeFileSync(join(vol, '..2026_11_27_04_00_00.1', 'client-secret'), 'K8S');
    symlinkSync('..2026_11_27_04_00_00.1', join(vol, '..data'));
    symlinkSync('..data/client-secret', join(vol, 'client-secret'));
    expect(readInputFile(join(vol, 'client-secret'), OPT).toString()).toBe('K8S');
    writeFileSync(join(tmp.dir, 'empty'), '');
    expect(readInputFile(join(tmp.dir, 'empty'), OPT).length).toBe(0);
  });

  it('a file over the limit is refused with its size and the limit; one at the limit is read', () => {
    const file = join(tmp.dir, 'big');
    writeFileSync(file, Buffer.alloc(1025, 0x61));
    expect(refusal(file).message).toBe(`${OPT.option}: ${file} is 1025 bytes, over the 1 KiB limit`);
    writeFileSync(file, Buffer.alloc(1024, 0x61));
    expect(readInputFile(file, OPT).length).toBe(1024);
    expect(INPUT_FILE_MAX_BYTES).toEqual({ secret: 65536, config: 1048576, csv: 16777216 });
  });

  it('a folder, a character device, a socket and a missing file are refused, naming what they are', async () => {
    expect(refusal(tmp.dir).message).toBe(`${OPT.option}: ${tmp.dir} is a folder, not a regular file`);
    // /dev/null, not /dev/zero: were the check gone, this test would still end (issue 26's
    // /dev/zero is tried through the CLI, in a child process with a deadline).
    expect(refusal('/dev/null').message).toBe(`${OPT.option}: /dev/null is a character device, not a regular file`);
    const sock = join(tmp.dir, 'sock');
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      expect(refusal(sock).message).toMatch(/is a socket, not a regular file$/);
    } finally {
      server.close();
    }
    expect(refusal(join(tmp.dir, 'nope')).message).toBe(`${OPT.option}: cannot read ${join(tmp.dir, 'nope')}: no such file`);
    expect(refusal(join(tmp.dir, 'plain', 'x')).message).toMatch(/a part of the path is not a folder$/);
    const loop = join(tmp.dir, 'loop');
    symlinkSync(loop, loop);
    expect(refusal(loop).message).toMatch(/a symlink loop$/);
  });

  it('a FIFO with no writer is refused at once, not waited on (bounded: a writer frees a blocked open after 3 s)', () => {
    const fifo = join(tmp.dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    // Were the read to block in open(2), this process could not time out by itself: a separate
    // process opens the FIFO for writing after 3 s, which ends such a wait, and the elapsed
    // time then fails the test.
    const rescuer = spawn('sh', ['-c', 'sleep 3; exec 3>"$0"; sleep 1', fifo], { stdio: 'ignore' });
    try {
      const t0 = performance.now();
      expect(refusal(fifo).message).toBe(`${OPT.option}: ${fifo} is a FIFO (named pipe), not a regular file`);
      expect(() => checkInputFile(fifo, OPT)).toThrow(/FIFO/);
      expect(performance.now() - t0).toBeLessThan(1000);
    } finally {
      rescuer.kill('SIGKILL');
    }
  });

  it('checkInputFile checks without opening: a regular file passes, the same refusals as readInputFile', () => {
    checkInputFile(join(tmp.dir, 'plain'), OPT);
    expect(() => checkInputFile('/dev/null', OPT)).toThrow(`${OPT.option}: /dev/null is a character device, not a regular file`);
    expect(() => checkInputFile(join(tmp.dir, 'big'), { ...OPT, maxBytes: 10 })).toThrow(/over the 10 bytes limit/);
  });
});
