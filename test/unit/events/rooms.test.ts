import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../../../src/paths.js';

const SRC = join(PACKAGE_ROOT, 'src');

/** Every .ts file under `src/<room>`, recursively. */
function filesOf(room: string): string[] {
  return readdirSync(join(SRC, room), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(SRC, room, f));
}

/** The rooms of `src/` that `file` imports (static, side-effect and dynamic imports, `import type` too). */
function roomsImported(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => relative(SRC, resolve(dirname(file), s)).split(/[\\/]/)[0]!);
}

/** `file: room` for each import of `from` that reaches into `to`. */
function crossings(from: string, to: string): string[] {
  const files = filesOf(from);
  expect(files.length).toBeGreaterThan(0);
  return files.flatMap((f) =>
    roomsImported(f)
      .filter((room) => room === to)
      .map((room) => `${relative(SRC, f)}: ${room}`),
  );
}

describe('the rooms of src/ (docs/architecture.md "Layout")', () => {
  it('reads the import lines it judges (a crossing is seen)', () => {
    // src/extract uses both sides: the check finds its imports of each.
    expect(crossings('extract', 'upstream').length).toBeGreaterThan(0);
    expect(crossings('extract', 'warehouse').length).toBeGreaterThan(0);
  });

  it('src/warehouse imports nothing from src/upstream: the event batch format lives in src/events', () => {
    expect(crossings('warehouse', 'upstream')).toEqual([]);
    expect(crossings('warehouse', 'events').length).toBeGreaterThan(0);
  });

  it('src/upstream imports nothing from src/warehouse', () => {
    expect(crossings('upstream', 'warehouse')).toEqual([]);
  });

  it('src/events imports from neither side', () => {
    expect(crossings('events', 'upstream')).toEqual([]);
    expect(crossings('events', 'warehouse')).toEqual([]);
  });
});

describe('the stages below the pipeline (docs/architecture.md "Layout")', () => {
  it('src/publish imports neither src/transform nor src/export: it learns the models from src/catalog', () => {
    expect(crossings('publish', 'transform')).toEqual([]);
    expect(crossings('publish', 'export')).toEqual([]);
    expect(crossings('publish', 'catalog').length).toBeGreaterThan(0);
  });

  it('src/catalog reads files only: it imports no stage and no warehouse', () => {
    for (const room of ['extract', 'upstream', 'warehouse', 'transform', 'export', 'report', 'publish', 'pipeline'])
      expect(crossings('catalog', room), room).toEqual([]);
  });
});
