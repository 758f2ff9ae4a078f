import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureReaderDir, folderMode, formatMode, readerModes, writeReaderFile } from '../../../src/fs/readerFiles.js';
import { tempDir } from '../../helpers/tmp.js';

const mode = (p: string): string => formatMode(statSync(p).mode);

describe('reader files and folders', () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  const saved = process.umask();
  afterEach(() => {
    process.umask(saved);
    tmp?.cleanup();
  });

  it('folder modes follow the file mode: 0600 → 0700, 0640 → 0750, 0644 → 0755, 0604 → 0705', () => {
    expect([0o600, 0o640, 0o644, 0o604].map((m) => formatMode(folderMode(m)))).toEqual(['0700', '0750', '0755', '0705']);
  });

  it.each([0o077, 0o022, 0o000])('exact modes whatever the umask (%o): created folders, atomic files', (umask) => {
    process.umask(umask);
    tmp = tempDir();
    const modes = readerModes(0o640);
    const file = join(tmp.dir, 'a', 'b', 'metrics.prom');
    writeReaderFile(file, 'x 1\n', modes);
    expect(readFileSync(file, 'utf8')).toBe('x 1\n');
    expect(mode(file)).toBe('0640');
    expect(mode(join(tmp.dir, 'a'))).toBe('0750');
    expect(mode(join(tmp.dir, 'a', 'b'))).toBe('0750');
    writeReaderFile(file, 'x 2\n', readerModes(0o600));
    expect(mode(file)).toBe('0600');
    expect(readdirSync(join(tmp.dir, 'a', 'b'))).toEqual(['metrics.prom']); // no temporary left
  });

  it('an existing folder is widened, never narrowed, unless it is the job’s own (exact)', () => {
    tmp = tempDir();
    const d = join(tmp.dir, 'own');
    mkdirSync(d);
    chmodSync(d, 0o700);
    ensureReaderDir(d, readerModes(0o644));
    expect(mode(d)).toBe('0755');
    ensureReaderDir(d, readerModes(0o600));
    expect(mode(d)).toBe('0755');
    ensureReaderDir(d, readerModes(0o640), true);
    expect(mode(d)).toBe('0750');
  });

  it('writes nothing through a symlink: one at the temporary name or at the file itself is replaced, its target untouched (writes left the export folder)', () => {
    tmp = tempDir();
    const outside = join(tmp.dir, 'outside.txt');
    writeFileSync(outside, 'not ours');
    const dir = join(tmp.dir, 'exports');
    mkdirSync(dir);
    symlinkSync(outside, join(dir, `.report.html.${process.pid}.tmp`));
    symlinkSync(outside, join(dir, 'report.html'));
    writeReaderFile(join(dir, 'report.html'), '<html></html>', readerModes());
    expect(readFileSync(outside, 'utf8')).toBe('not ours');
    expect(lstatSync(join(dir, 'report.html')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'report.html'), 'utf8')).toBe('<html></html>');
    expect(readdirSync(dir)).toEqual(['report.html']);
  });
});
