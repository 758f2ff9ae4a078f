/**
 * The Parquet exports are atomic as a set (docs/exports.md): each export is a new snapshot
 * folder published by swapping the `current` symlink; the stable paths are symlinks into
 * `current`. Against a real DuckDB file and export folder in a temporary folder.
 */
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ExportError } from '../../../src/errors.js';
import { exportParquet, type Manifest } from '../../../src/export/exportParquet.js';
import { sqlString, Warehouse } from '../../../src/warehouse/Warehouse.js';
import { tempDir } from '../../helpers/tmp.js';

const tmp = tempDir('recruit-etl-export-');
afterAll(() => tmp.cleanup());

const MODELS = ['dim_site', 'fct_visit', 'mart_summary'] as const;

let n = 0;
let wh: Warehouse;
let dir: string;
beforeEach(async () => {
  n += 1;
  wh = await Warehouse.open(join(tmp.dir, `wh-${n}.duckdb`), { threads: 2 });
  dir = join(tmp.dir, `exports-${n}`);
});
afterEach(async () => {
  await wh.close();
});

/** (Re)build `models` with `rows` rows each, every row tagged `tag` in column `run`. */
async function buildModels(tag: string, rows: number, models: readonly string[] = MODELS): Promise<void> {
  for (const m of models) await wh.run(`create or replace table main.${m} as select ${sqlString(tag)} as run, i from range(${rows}) t(i)`);
}

/** A model that fails at COPY time, sorted between dim_site and fct_visit. */
async function addBrokenModel(): Promise<void> {
  await wh.run(
    `create or replace view main.fct_m_broken as select case when i >= 0 then error('injected failure') end as x from range(3) t(i)`,
  );
}

/** What DuckDB reads at each stable `<model>.parquet` of the export folder: run tags and row count. */
async function readStable(): Promise<Record<string, { runs: string[]; rows: number }>> {
  const out: Record<string, { runs: string[]; rows: number }> = {};
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.parquet'))
    .sort()) {
    const rows = await wh.all<{ run: string }>(`select run from ${sqlString(join(dir, f))}`);
    out[f] = { runs: [...new Set(rows.map((r) => r.run))].sort(), rows: rows.length };
  }
  return out;
}

function readManifest(path = join(dir, 'manifest.json')): Manifest {
  return JSON.parse(readFileSync(path, 'utf8')) as Manifest;
}

/** Every name ending in `.tmp` under `root`, recursively (symlinks not followed). */
function tmpFilesUnder(root: string): string[] {
  return readdirSync(root, { withFileTypes: true }).flatMap((d) => {
    const p = join(root, d.name);
    return [...(d.name.endsWith('.tmp') ? [p] : []), ...(d.isDirectory() ? tmpFilesUnder(p) : [])];
  });
}

const snapshots = (): string[] => readdirSync(join(dir, 'snapshots')).sort();
const files = (models: readonly string[]): string[] => models.map((m) => `${m}.parquet`).sort();

describe('exportParquet: the export set is atomic', () => {
  test('a second export publishes the whole new set at every stable path and keeps the first snapshot; a third removes the first', async () => {
    await buildModels('run-1', 1);
    const m1 = await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    expect(m1.snapshot).toBe('snapshots/run-1');
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-1');

    await buildModels('run-2', 2);
    await buildModels('run-2', 2, ['fct_added']);
    const m2 = await exportParquet({ wh, exportDir: dir, runId: 'run-2' });

    // current, the stable symlinks, the manifest and DuckDB's reads all name run 2.
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-2');
    const all = files([...MODELS, 'fct_added']);
    for (const f of [...all, 'manifest.json']) {
      expect(lstatSync(join(dir, f)).isSymbolicLink(), f).toBe(true);
      expect(readlinkSync(join(dir, f)), f).toBe(`current/${f}`);
    }
    expect(await readStable()).toEqual(Object.fromEntries(all.map((f) => [f, { runs: ['run-2'], rows: 2 }])));
    const manifest = readManifest();
    expect(manifest).toEqual(m2);
    expect(manifest.runId).toBe('run-2');
    expect(manifest.snapshot).toBe('snapshots/run-2');
    expect(manifest.files.map((f) => f.file).sort()).toEqual(all);
    for (const f of manifest.files) expect(statSync(join(dir, f.file)).size, f.file).toBe(f.bytes);
    // A glob over the stable paths reads through the symlinks too.
    expect(await wh.one(`select count(*)::int as n from read_parquet(${sqlString(join(dir, '*.parquet'))}, union_by_name = true)`)).toEqual(
      { n: 8 },
    );

    // The first snapshot is kept whole for readers still on it.
    expect(snapshots()).toEqual(['run-1', 'run-2']);
    expect(readManifest(join(dir, 'snapshots', 'run-1', 'manifest.json')).runId).toBe('run-1');
    expect(await wh.all(`select run, i from ${sqlString(join(dir, 'snapshots', 'run-1', 'fct_visit.parquet'))}`)).toEqual([
      { run: 'run-1', i: 0n },
    ]);

    // Modes as before: files 0600, folders 0700.
    for (const f of [...all, 'manifest.json']) expect(statSync(join(dir, f)).mode & 0o777, f).toBe(0o600);
    for (const d of [dir, join(dir, 'snapshots'), join(dir, 'snapshots', 'run-2')]) expect(statSync(d).mode & 0o777, d).toBe(0o700);
    expect(tmpFilesUnder(dir)).toEqual([]);

    // Third export: fct_added no longer exists, and a killed export left a folder and a temporary symlink.
    const killed = join(dir, 'snapshots', 'run-killed');
    mkdirSync(killed, { mode: 0o700 });
    writeFileSync(join(killed, '.dim_site.parquet.run-killed.tmp'), 'half a file');
    const past = new Date(Date.now() - 3600_000);
    utimesSync(killed, past, past);
    symlinkSync('snapshots/run-killed', join(dir, '.current.run-killed.tmp'));
    await wh.run('drop table main.fct_added');
    await buildModels('run-3', 3);
    await exportParquet({ wh, exportDir: dir, runId: 'run-3' });
    expect(snapshots()).toEqual(['run-2', 'run-3']);
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-3');
    expect(lstatSync(join(dir, 'fct_added.parquet'), { throwIfNoEntry: false })).toBeUndefined();
    expect(await readStable()).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-3'], rows: 3 }])));
    expect(readManifest().runId).toBe('run-3');
    expect(tmpFilesUnder(dir)).toEqual([]);
  });

  test('the marts, dimensions and dq_ results are exported and listed in the manifest; staging, intermediate and seeds are not', async () => {
    await buildModels('run-1', 3, [
      'dq_summary',
      'dq_unmapped_sites',
      'fct_visit',
      'mart_summary',
      'dim_site',
      'stg_events',
      'int_patients',
      'seed_event_types',
    ]);
    const manifest = await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    const want = files(['dim_site', 'dq_summary', 'dq_unmapped_sites', 'fct_visit', 'mart_summary']);
    expect(manifest.files.map((f) => f.file).sort()).toEqual(want);
    expect(readManifest().files.find((f) => f.model === 'dq_summary')).toMatchObject({
      file: 'dq_summary.parquet',
      rows: 3,
      columns: [
        { name: 'run', type: 'VARCHAR' },
        { name: 'i', type: 'BIGINT' },
      ],
    });
    expect(
      readdirSync(dir)
        .filter((f) => f.endsWith('.parquet'))
        .sort(),
    ).toEqual(want);
    expect(await readStable()).toMatchObject({ 'dq_summary.parquet': { runs: ['run-1'], rows: 3 } });
    // The export writes without keeping row order (EXPORT_SETTINGS) and puts the session's setting back.
    expect(await wh.one(`select current_setting('preserve_insertion_order') as v`)).toEqual({ v: true });
  });

  test('a failure mid-export leaves the previous set whole at every stable path, and the half-written snapshot is removed', async () => {
    await buildModels('run-1', 1);
    const m1 = await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    const before = await readStable();

    // Run 2: new rows in every model, a new model written before the one that fails.
    await buildModels('run-2', 2);
    await buildModels('run-2', 2, ['fct_added']);
    await addBrokenModel();
    const err = await exportParquet({ wh, exportDir: dir, runId: 'run-2' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExportError);
    expect((err as ExportError).message).toMatch(/fct_m_broken.*injected failure/);
    expect(await wh.one(`select current_setting('preserve_insertion_order') as v`)).toEqual({ v: true });

    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-1');
    expect(await readStable()).toEqual(before);
    expect(before).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-1'], rows: 1 }])));
    expect(readManifest()).toEqual(m1);
    expect(existsSync(join(dir, 'fct_added.parquet'))).toBe(false);
    expect(snapshots()).toEqual(['run-1']);
    expect(tmpFilesUnder(dir)).toEqual([]);

    // Once the model is fixed, the next export publishes the new set.
    await wh.run('drop view main.fct_m_broken');
    await exportParquet({ wh, exportDir: dir, runId: 'run-3' });
    expect(await readStable()).toEqual(Object.fromEntries(files([...MODELS, 'fct_added']).map((f) => [f, { runs: ['run-2'], rows: 2 }])));
    expect(readManifest().runId).toBe('run-3');
  });

  test('a failure at the swap itself, after every file of the new set is written, leaves the previous set whole', async () => {
    await buildModels('run-1', 1);
    const m1 = await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    await buildModels('run-2', 2);
    // A folder where the swap creates its temporary symlink: the rename cannot happen.
    mkdirSync(join(dir, '.current.run-2.tmp'));
    await expect(exportParquet({ wh, exportDir: dir, runId: 'run-2' })).rejects.toThrow(ExportError);
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-1');
    expect(await readStable()).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-1'], rows: 1 }])));
    expect(readManifest()).toEqual(m1);
    expect(snapshots()).toEqual(['run-1']);
  });

  describe('the regular files left by an older version of the job', () => {
    const OLD_RUN = '20250101T000000Z-0a1b2c';
    /** The old layout: regular Parquet files and manifest.json in the export folder, a stale model, a leftover temporary file. */
    async function legacyLayout(): Promise<{ inodes: Record<string, number>; manifest: string }> {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      await buildModels('old', 4, [...MODELS, 'fct_gone']);
      for (const m of [...MODELS, 'fct_gone']) {
        await wh.run(`copy (select * from main.${m}) to ${sqlString(join(dir, `${m}.parquet`))} (format parquet)`);
      }
      await wh.run('drop table main.fct_gone');
      const manifest = `${JSON.stringify({ runId: OLD_RUN, exportedAt: '2025-01-01T00:00:00.000Z', files: MODELS.map((m) => ({ model: m, file: `${m}.parquet` })) }, null, 2)}\n`;
      writeFileSync(join(dir, 'manifest.json'), manifest, { mode: 0o600 });
      writeFileSync(join(dir, `.fct_visit.parquet.${OLD_RUN}.tmp`), 'half a file');
      const inodes: Record<string, number> = {};
      for (const f of [...files([...MODELS, 'fct_gone']), 'manifest.json']) {
        expect(lstatSync(join(dir, f)).isFile()).toBe(true);
        inodes[f] = statSync(join(dir, f)).ino;
      }
      return { inodes, manifest };
    }

    test('are upgraded to the symlink layout: they become the previous snapshot, the same files, and the stale model goes after the swap', async () => {
      await legacyLayout();
      await buildModels('run-1', 1);
      const m = await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
      expect(m.snapshot).toBe('snapshots/run-1');
      expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-1');
      for (const f of [...files(MODELS), 'manifest.json']) expect(readlinkSync(join(dir, f)), f).toBe(`current/${f}`);
      expect(await readStable()).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-1'], rows: 1 }])));
      expect(existsSync(join(dir, 'fct_gone.parquet'))).toBe(false);
      expect(readManifest().runId).toBe('run-1');
      // The old export is kept as the previous snapshot, then goes with the next export.
      expect(snapshots()).toEqual([`legacy-${OLD_RUN}`, 'run-1']);
      expect(readManifest(join(dir, 'snapshots', `legacy-${OLD_RUN}`, 'manifest.json')).runId).toBe(OLD_RUN);
      expect(tmpFilesUnder(dir)).toEqual([]);
      await exportParquet({ wh, exportDir: dir, runId: 'run-2' });
      expect(snapshots()).toEqual(['run-1', 'run-2']);
    });

    test('a failure during the first export after the upgrade leaves the old files readable at every stable path, byte for byte the same files', async () => {
      const { inodes, manifest } = await legacyLayout();
      const before = await readStable();
      expect(before['fct_visit.parquet']).toEqual({ runs: ['old'], rows: 4 });
      await buildModels('run-1', 1);
      await addBrokenModel();
      await expect(exportParquet({ wh, exportDir: dir, runId: 'run-1' })).rejects.toThrow(ExportError);

      // Every stable path is now a symlink into current, which holds the old files themselves
      // (hard links: each was renamed over by a link to the same inode, never missing).
      expect(readlinkSync(join(dir, 'current'))).toBe(`snapshots/legacy-${OLD_RUN}`);
      for (const [f, ino] of Object.entries(inodes)) {
        expect(readlinkSync(join(dir, f)), f).toBe(`current/${f}`);
        expect(statSync(join(dir, f)).ino, f).toBe(ino);
      }
      expect(await readStable()).toEqual(before);
      expect(readFileSync(join(dir, 'manifest.json'), 'utf8')).toBe(manifest);
      expect(snapshots()).toEqual([`legacy-${OLD_RUN}`]);
      expect(tmpFilesUnder(dir)).toEqual([]);
    });

    test('an upgrade killed after the old files were linked into their snapshot, before current existed, is redone whole', async () => {
      const { inodes } = await legacyLayout();
      // What a kill mid-adoption leaves: a partial legacy snapshot, no current, the regular files.
      mkdirSync(join(dir, 'snapshots', `legacy-${OLD_RUN}`), { recursive: true, mode: 0o700 });
      linkSync(join(dir, 'dim_site.parquet'), join(dir, 'snapshots', `legacy-${OLD_RUN}`, 'dim_site.parquet'));
      await buildModels('run-1', 1);
      await addBrokenModel();
      await expect(exportParquet({ wh, exportDir: dir, runId: 'run-1' })).rejects.toThrow(ExportError);
      expect(readdirSync(join(dir, 'snapshots', `legacy-${OLD_RUN}`)).sort()).toEqual(
        [...files([...MODELS, 'fct_gone']), 'manifest.json'].sort(),
      );
      for (const [f, ino] of Object.entries(inodes)) expect(statSync(join(dir, f)).ino, f).toBe(ino);
    });
  });
});

describe('the export folder is ours, and only it', () => {
  test('a restored export folder (current a real folder, as cp -rL leaves it) is adopted: it made every later export exit 7 EINVAL, for good', async () => {
    await buildModels('run-1', 1);
    await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    // The restore: the folder copied with cp -rL (every symlink followed) and copied back.
    const restored = join(tmp.dir, `restored-${n}`);
    execFileSync('cp', ['-rL', dir, restored]);
    execFileSync('rm', ['-rf', dir]);
    execFileSync('mv', [restored, dir]);
    expect(lstatSync(join(dir, 'current')).isDirectory()).toBe(true);
    expect(lstatSync(join(dir, 'fct_visit.parquet')).isFile()).toBe(true);
    const before = await readStable();

    await buildModels('run-2', 2);
    const m2 = await exportParquet({ wh, exportDir: dir, runId: 'run-2' });
    expect(m2.runId).toBe('run-2');
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-2');
    for (const f of [...files(MODELS), 'manifest.json']) expect(readlinkSync(join(dir, f)), f).toBe(`current/${f}`);
    expect(await readStable()).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-2'], rows: 2 }])));
    // The restored set is kept as the previous snapshot, the same bytes.
    expect(before).toEqual(Object.fromEntries(files(MODELS).map((f) => [f, { runs: ['run-1'], rows: 1 }])));
    expect(readManifest(join(dir, 'snapshots', 'restored-run-2', 'manifest.json')).runId).toBe('run-1');

    await buildModels('run-3', 3);
    await exportParquet({ wh, exportDir: dir, runId: 'run-3' });
    expect(snapshots()).toEqual(['run-2', 'run-3']);
    expect(readlinkSync(join(dir, 'current'))).toBe('snapshots/run-3');
  });

  test('snapshots/ a symlink to a folder elsewhere is refused, naming the link: snapshots were written there and its own files deleted', async () => {
    const elsewhere = join(tmp.dir, `elsewhere-${n}`);
    mkdirSync(join(elsewhere, 'photos'), { recursive: true });
    writeFileSync(join(elsewhere, 'photos', 'a.jpg'), 'mine');
    writeFileSync(join(elsewhere, 'notes.txt'), 'mine too');
    const past = new Date(Date.now() - 3600_000);
    utimesSync(join(elsewhere, 'photos'), past, past);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    symlinkSync(elsewhere, join(dir, 'snapshots'));
    const listing = (): string[] => readdirSync(elsewhere, { recursive: true }).map(String).sort();
    const was = listing();
    const modeWas = statSync(elsewhere).mode;

    await buildModels('run-1', 1);
    const err = await exportParquet({ wh, exportDir: dir, runId: 'run-1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExportError);
    expect((err as ExportError).exitCode).toBe(7);
    expect((err as ExportError).message).toContain(`${join(dir, 'snapshots')} is a symlink (to ${elsewhere})`);
    expect(listing()).toEqual(was);
    expect(statSync(elsewhere).mode).toBe(modeWas);
    expect(readdirSync(dir)).toEqual(['snapshots']);
  });

  test('snapshot cleanup deletes only what an export writes: a folder, file or symlink of someone else in snapshots/ stays', async () => {
    await buildModels('run-1', 1);
    await exportParquet({ wh, exportDir: dir, runId: 'run-1' });
    const root = join(dir, 'snapshots');
    const outside = join(tmp.dir, `outside-${n}`);
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep.parquet'), 'not ours');
    mkdirSync(join(root, 'backup', 'nested'), { recursive: true });
    writeFileSync(join(root, 'backup', 'nested', 'x.parquet'), 'not ours');
    writeFileSync(join(root, 'README.txt'), 'not ours');
    symlinkSync(outside, join(root, 'linked'));
    const past = new Date(Date.now() - 3600_000);
    for (const f of ['backup', 'README.txt']) utimesSync(join(root, f), past, past);

    for (const run of ['run-2', 'run-3']) {
      await buildModels(run, 2);
      await exportParquet({ wh, exportDir: dir, runId: run });
    }
    expect(snapshots()).toEqual(['README.txt', 'backup', 'linked', 'run-2', 'run-3']);
    expect(readdirSync(outside)).toEqual(['keep.parquet']);
    expect(readFileSync(join(root, 'backup', 'nested', 'x.parquet'), 'utf8')).toBe('not ours');
  });
});
