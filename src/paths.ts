/**
 * Locations inside the installed package, resolved from this module's own URL so that
 * they work from `src/` (vitest) and from `dist/` (the built CLI) alike.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'sql'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('recruit-etl: cannot find the package root (package.json beside sql/)');
    dir = parent;
  }
}

/** Absolute path of the package root (the folder holding package.json and sql/). */
export const PACKAGE_ROOT: string = findPackageRoot();

/** Folder of the numbered warehouse DDL migrations. */
export const WAREHOUSE_SQL_DIR: string = join(PACKAGE_ROOT, 'sql', 'warehouse');
/** Folder of the SQL models (dbt layout: staging/, intermediate/, marts/). */
export const MODELS_DIR: string = join(PACKAGE_ROOT, 'sql', 'models');
/** Folder of the dbt macros the models call (expanded by the job's runner too). */
export const MACROS_DIR: string = join(PACKAGE_ROOT, 'sql', 'macros');
/** Folder of the seed CSV files. */
export const SEEDS_DIR: string = join(PACKAGE_ROOT, 'sql', 'seeds');
/**
 * The project-local DuckDB extension folder that `make extensions` fills from PyPI
 * (`v<version>/<platform>/<name>.duckdb_extension`; docs/lakehouse.md "Extensions").
 */
export const LOCAL_EXTENSION_DIR: string = join(PACKAGE_ROOT, '.duckdb', 'extensions');
