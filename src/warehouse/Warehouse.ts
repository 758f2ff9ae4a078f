/**
 * The DuckDB warehouse handle: one instance and one connection per process, explicit
 * transactions, migrations, and DuckDB errors mapped to the exit codes of docs/contracts.md ("Exit codes").
 *
 * `@duckdb/node-api` is imported only in `src/warehouse/` (docs/architecture.md "One third-party library per folder").
 *
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, chmodSync, existsSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { LockError, WarehouseError } from '../errors.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { PACKAGE_ROOT, WAREHOUSE_SQL_DIR } from '../paths.js';

/** Options of {@link Warehouse.open}. */
export interface WarehouseOptions {
  /** Open read-only (analysts, `status`). Default false. */
  readOnly?: boolean;
  /** DuckDB `memory_limit`, e.g. `'1GB'`. Default `'2GB'` (DuckDB's own default is 80 % of RAM; docs/architecture.md "DuckDB"). */
  memoryLimit?: string;
  /** DuckDB `threads`. Default: DuckDB's (the core count). */
  threads?: number;
  /** DuckDB `temp_directory` for spilling. Default `<db>.tmp` beside the file. */
  tempDirectory?: string;
  logger?: Logger;
}

/** Parameter values accepted by {@link Warehouse.run} and {@link Warehouse.all}. */
export type SqlParam = DuckDBValue;

/**
 * DuckDB settings of the stages that write models or files of models (the transform, the
 * export), through {@link Warehouse.withSettings}: models are sets and promise no row order
 * (readers sort; docs/models.md "Performance rules"), so DuckDB may write a table or a
 * Parquet file from both threads without merging them back into order
 * (docs/ingest.md "Settings").
 */
export const UNORDERED_WRITES: Readonly<Record<string, string>> = Object.freeze({ preserve_insertion_order: 'false' });

/**
 * Rows per row group of the tables this job writes (DuckDB's default: 122,880): an extract
 * batch then fills whole row groups that DuckDB writes straight to the file at commit. Every
 * writable session must use the same size. Why this size: `docs/ingest.md` "Row groups".
 */
export const ROW_GROUP_SIZE = 16_384;

/**
 * DuckDB `checkpoint_threshold` of a writable session: the WAL is folded into the file every
 * 512 MB instead of every 16 MB (see {@link Warehouse.open}).
 */
export const CHECKPOINT_THRESHOLD = '512MB';

/**
 * DuckDB `max_vacuum_tasks` of a writable session: 0, no checkpoint merges row groups. A
 * checkpoint's vacuum merges small neighbouring row groups of every table, `raw.events`
 * included whether it changed or not, and rewrites them whole in memory: with wide events
 * that was gigabytes at every later checkpoint (`docs/ingest.md` "Memory with wide events"). Fully
 * deleted row groups are still dropped; the transform compacts the tables it deletes from
 * (`docs/incremental.md` "Compaction").
 */
export const MAX_VACUUM_TASKS = '0';

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Matches DuckDB's lock refusal: `Could not set lock on file "…": Conflicting lock is held in … (PID n)`. */
const LOCK_RE = /Could not set lock on file|Conflicting lock is held/i;
const FATAL_RE = /database has been invalidated|FATAL Error|INTERNAL Error/i;
const DISK_RE = /No space left on device|disk is full|could not write/i;

/** DuckDB error classes that a value of the data raises; their messages quote the value. */
const DATA_ERROR_RE = /\b(Conversion Error|Invalid Input Error|Out of Range Error)\b/;

/**
 * The class of a DuckDB error that a value of the data raised (`Conversion Error`, `Invalid
 * Input Error`, `Out of Range Error`): its message quotes that value, which may be payload
 * (docs/security.md). Undefined for any other error.
 */
export function dataErrorClass(message: string): string | undefined {
  return DATA_ERROR_RE.exec(message)?.[1];
}

/**
 * Translate a DuckDB error into a {@link WarehouseError} or {@link LockError}.
 * Messages keep the first line of DuckDB's text without the input it quotes (it may name the
 * file); so does the cause, which `--verbose` prints with its stack.
 */
export function mapDuckDbError(err: unknown, what: string, path?: string): Error {
  const msg = err instanceof Error ? err.message : String(err);
  err = quotelessCause(err, msg);
  if (LOCK_RE.test(msg)) {
    const pid = /PID (\d+)/.exec(msg)?.[1];
    return new LockError(`another process${pid ? ` (PID ${pid})` : ''} holds the database ${path ?? ''}`.trim(), {
      cause: err,
      hint: 'wait for the other run to finish; analysts read the published copy (warehouse.readonly.duckdb) or the Parquet exports, never the live file',
    });
  }
  if (FATAL_RE.test(msg)) {
    return new WarehouseError(`fatal DuckDB error while ${what}: ${firstLine(msg)}`, {
      cause: err,
      hint: 'the database instance is unusable; the run stops here, committed batches are kept. Check the disk and run again',
    });
  }
  if (DISK_RE.test(msg)) {
    return new WarehouseError(`the disk refused a write while ${what}: ${firstLine(msg)}`, {
      cause: err,
      hint: 'free disk space and run again; committed batches are kept',
    });
  }
  return new WarehouseError(`DuckDB failed while ${what}: ${firstLine(msg)}`, { cause: err });
}

/**
 * DuckDB's text up to the input it quotes: a conversion error's `Input: "<the value>"` and a CSV
 * error's `Original Line: …` (a whole row of a batch file) may be event payload, and run to the
 * end of the message (`docs/ingest.md` "Quarantine").
 */
function withoutQuotedInput(s: string): string {
  return s.replace(/\s*(?:Input|Original Line):.*$/s, '');
}

/** DuckDB's error as a cause to keep (`--verbose` prints it): its text without the input it quotes, and its stack frames. */
function quotelessCause(err: unknown, msg: string): Error {
  const safe = new Error(withoutQuotedInput(msg));
  const frames = err instanceof Error ? (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l)) : [];
  safe.stack = [`${safe.name}: ${safe.message}`, ...frames].join('\n');
  return safe;
}

/** The first line of a DuckDB message, without the input it quotes ({@link withoutQuotedInput}). */
function firstLine(s: string): string {
  const line = withoutQuotedInput(s.split('\n')[0] ?? s);
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}

/**
 * One open DuckDB database. Open it once per process with {@link Warehouse.open} and
 * {@link Warehouse.close} it in `finally`: closing the instance releases the file lock.
 */
export class Warehouse {
  /** Absolute path of the database file, or `:memory:`. */
  readonly path: string;
  readonly readOnly: boolean;
  private readonly instance: DuckDBInstance;
  private readonly conn: DuckDBConnection;
  /** The logger given to {@link Warehouse.open} (silent by default). */
  readonly logger: Logger;
  private inTransaction = false;
  private closed = false;
  /** Set while {@link interruptible} runs: once aborted, no further statement starts. */
  private stopSignal: AbortSignal | undefined;

  private constructor(
    path: string,
    readOnly: boolean,
    instance: DuckDBInstance,
    conn: DuckDBConnection,
    logger: Logger,
    /** The settings in force that this job set ({@link open}, then {@link withSettings}). */
    private readonly current: Record<string, string>,
  ) {
    this.path = path;
    this.readOnly = readOnly;
    this.instance = instance;
    this.conn = conn;
    this.logger = logger;
  }

  /**
   * Open (and create, unless read-only) the database file. A new file and its folder are
   * created 0600 / 0700 (docs/architecture.md "Files"). A writable file is ATTACHed to an in-memory
   * session with {@link ROW_GROUP_SIZE} and made the default catalog (`USE`); a read-only one
   * is opened directly.
   *
   * @param path file path, or `:memory:`
   * @throws {LockError} another process holds the file (exit 5)
   * @throws {WarehouseError} the file cannot be opened (exit 7)
   */
  static async open(path: string, options: WarehouseOptions = {}): Promise<Warehouse> {
    const readOnly = options.readOnly ?? false;
    const abs = path === ':memory:' ? path : resolve(path);
    const config: Record<string, string> = {
      memory_limit: options.memoryLimit ?? '2GB',
    };
    if (options.threads !== undefined) config['threads'] = String(options.threads);
    if (abs !== ':memory:') {
      if (readOnly) {
        if (!existsSync(abs)) {
          throw new WarehouseError(`the database ${abs} does not exist`, {
            hint: 'run `recruit-etl extract` (or `make demo`) first',
          });
        }
        config['access_mode'] = 'READ_ONLY';
      } else {
        mkdirSync(dirname(abs), { recursive: true, mode: 0o700 });
        config['temp_directory'] = options.tempDirectory ?? `${abs}.tmp`;
        // Fold the WAL into the file every 512 MB instead of every 16 MB (`docs/ingest.md`
        // "Settings"); the job checkpoints at the end of every successful run anyway.
        config['checkpoint_threshold'] = CHECKPOINT_THRESHOLD;
        config['max_vacuum_tasks'] = MAX_VACUUM_TASKS;
      }
    }
    const attach = abs !== ':memory:' && !readOnly;
    // Opening a file for writing replays its WAL and folds it in on close: a newer build's
    // warehouse is refused before that, read-only (docs/contracts.md "Warehouse tables").
    if (attach && existsSync(abs)) await refuseNewerWarehouse(abs);
    let instance: DuckDBInstance | undefined;
    let conn: DuckDBConnection | undefined;
    try {
      // A writable file is attached, not opened: only ATTACH takes ROW_GROUP_SIZE, and the
      // setting holds for this session's writes only. Its catalog keeps the name DuckDB gives
      // the file when it opens it (`warehouse.duckdb` → `warehouse`, `main.duckdb` →
      // `main_db`), except `memory.*`, which would clash with the session's own catalog.
      instance = await DuckDBInstance.create(attach ? ':memory:' : abs, config);
      conn = await instance.connect();
      if (attach) {
        try {
          await conn.run(`attach ${sqlString(abs)} (row_group_size ${ROW_GROUP_SIZE})`);
        } catch (err) {
          if (!/already exists/i.test(String((err as Error)?.message))) throw err;
          await conn.run(`attach ${sqlString(abs)} as recruit_etl_warehouse (row_group_size ${ROW_GROUP_SIZE})`);
        }
        const catalog = await conn.runAndReadAll('select database_name from duckdb_databases() where path = $1', [abs]);
        const name = catalog.getRows()[0]?.[0];
        if (typeof name !== 'string') throw new Error(`attached ${abs} but found no catalog for it`);
        await conn.run(`use ${quoteIdentifier(name)}`);
      }
    } catch (err) {
      conn?.closeSync();
      instance?.closeSync();
      throw mapDuckDbError(err, `opening ${abs}`, abs);
    }
    if (attach && options.tempDirectory === undefined) {
      // A spill folder left by a run killed while DuckDB spilled (the extract's small cap can
      // spill): no other process uses it, since this one now holds the file's write lock, and
      // DuckDB creates it again when it spills. Crash test: no `.tmp` left after a completing run.
      try {
        rmSync(config['temp_directory']!, { recursive: true, force: true });
      } catch (err) {
        // Not fatal: DuckDB reuses the folder; only the crash suite's tidiness is lost.
        (options.logger ?? silentLogger()).warn(
          { err: { message: (err as Error).message } },
          'could not remove the spill folder a previous run left',
        );
      }
    }
    if (attach) {
      try {
        chmodSync(abs, 0o600);
      } catch {
        // The file may not exist until the first write; the CLI's umask covers it then.
      }
    }
    const wh = new Warehouse(abs, readOnly, instance!, conn!, options.logger ?? silentLogger(), { ...config });
    // Stage every timestamp as UTC regardless of the machine (docs/domain.md "Time zones").
    await wh.run("set TimeZone = 'UTC'");
    return wh;
  }

  /**
   * Run one statement (with positional `?`/`$1` parameters) or several statements (no parameters).
   * @throws {WarehouseError}
   */
  async run(sql: string, params?: SqlParam[]): Promise<void> {
    this.throwIfStopped();
    try {
      await this.conn.run(sql, params);
    } catch (err) {
      throw mapDuckDbError(err, 'running SQL', this.path);
    }
  }

  /**
   * Run one statement (INSERT, UPDATE, DELETE) and return the rows it changed.
   * @throws {WarehouseError}
   */
  async runChanging(sql: string, params?: SqlParam[]): Promise<number> {
    this.throwIfStopped();
    try {
      return (await this.conn.run(sql, params)).rowsChanged;
    } catch (err) {
      throw mapDuckDbError(err, 'running SQL', this.path);
    }
  }

  /**
   * Run a query and return every row as an object of JS values
   * (BIGINT → bigint, INTEGER/DOUBLE → number, VARCHAR/JSON → string, TIMESTAMP(TZ) → Date, LIST → array).
   * @throws {WarehouseError}
   */
  async all<T = Record<string, unknown>>(sql: string, params?: SqlParam[]): Promise<T[]> {
    this.throwIfStopped();
    try {
      const reader = await this.conn.runAndReadAll(sql, params);
      return reader.getRowObjectsJS() as T[];
    } catch (err) {
      throw mapDuckDbError(err, 'querying', this.path);
    }
  }

  /**
   * Run a query and return its columns (`T` lists each column's JS type), for results of many
   * narrow rows: no object per row.
   * @throws {WarehouseError}
   */
  async columns<T extends unknown[]>(sql: string, params?: SqlParam[]): Promise<{ [K in keyof T]: T[K][] }> {
    this.throwIfStopped();
    try {
      const reader = await this.conn.runAndReadAll(sql, params);
      const cols = reader.getColumnsJS();
      while (cols.length < reader.columnCount) cols.push([]); // no rows: no column arrays
      return cols as { [K in keyof T]: T[K][] };
    } catch (err) {
      throw mapDuckDbError(err, 'querying', this.path);
    }
  }

  /**
   * {@link columns}, a chunk (2,048 rows) at a time, so that a long result is never held whole.
   * @throws {WarehouseError}
   */
  async *streamColumns<T extends unknown[]>(sql: string, params?: SqlParam[]): AsyncGenerator<{ [K in keyof T]: T[K][] }> {
    let result;
    this.throwIfStopped();
    try {
      result = await this.conn.stream(sql, params);
    } catch (err) {
      throw mapDuckDbError(err, 'querying', this.path);
    }
    for (;;) {
      let chunk;
      try {
        chunk = await result.fetchChunk();
      } catch (err) {
        throw mapDuckDbError(err, 'querying', this.path);
      }
      if (chunk === null || chunk.rowCount === 0) return;
      yield chunk.getColumns() as unknown as { [K in keyof T]: T[K][] };
    }
  }

  /**
   * Run `fn` under the DuckDB settings `settings` (name → value), then put back what was in
   * force before: the value set by {@link Warehouse.open} or an enclosing call, else DuckDB's
   * default (`reset`). Calls nest.
   * The one place where a stage changes settings (`docs/ingest.md` "Settings").
   *
   * @throws whatever `fn` throws; a failed restore is logged (with DuckDB's reason), never thrown
   */
  async withSettings<T>(settings: Readonly<Record<string, string>>, fn: () => Promise<T>): Promise<T> {
    const changed: [string, string | undefined][] = [];
    let result: T;
    try {
      for (const [name, value] of Object.entries(settings)) {
        changed.push([name, this.current[name]]);
        await this.run(`set ${name} = ${sqlString(value)}`);
        this.current[name] = value;
      }
      result = await fn();
    } finally {
      // Best effort: a setting left higher costs memory, never data; it must not fail what ran.
      await this.restoreSettings(changed).catch((restoreErr: unknown) => {
        this.logger.warn({ err: { message: (restoreErr as Error).message } }, 'could not restore a DuckDB setting');
      });
    }
    return result;
  }

  /**
   * Put back each setting's value from before (innermost first). A lower `memory_limit` is
   * refused while DuckDB holds more in memory, e.g. a small batch's rows not yet checkpointed:
   * then it is set again after a checkpoint, which writes them out.
   */
  private async restoreSettings(changed: readonly [string, string | undefined][]): Promise<void> {
    for (const [name, before] of [...changed].reverse()) {
      const sql = before === undefined ? `reset ${name}` : `set ${name} = ${sqlString(before)}`;
      try {
        await this.run(sql);
      } catch {
        await this.checkpoint();
        await this.run(sql);
      }
      if (before === undefined) delete this.current[name];
      else this.current[name] = before;
    }
  }

  /** First row of {@link all}, or undefined. */
  async one<T = Record<string, unknown>>(sql: string, params?: SqlParam[]): Promise<T | undefined> {
    const rows = await this.all<T>(sql, params);
    return rows[0];
  }

  /**
   * Run `fn` inside `BEGIN … COMMIT`. On any error: `ROLLBACK`, never `COMMIT`
   * (docs/architecture.md "DuckDB": after a constraint error DuckDB's COMMIT silently rolls back; after a
   * binder error it would keep the statements that succeeded). Not reentrant.
   *
   * @throws whatever `fn` throws, after the rollback
   */
  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    if (this.inTransaction) throw new WarehouseError('nested transaction (bug)');
    this.inTransaction = true;
    try {
      await this.run('begin transaction');
      let result: T;
      try {
        result = await fn();
      } catch (err) {
        await this.rollbackQuietly();
        throw err;
      }
      // Not through run(): a commit is never refused by a stop (an aborted fn never gets here).
      try {
        await this.conn.run('commit');
      } catch (err) {
        throw mapDuckDbError(err, 'committing', this.path);
      }
      return result;
    } finally {
      this.inTransaction = false;
    }
  }

  private async rollbackQuietly(): Promise<void> {
    try {
      await this.conn.run('rollback');
    } catch (err) {
      this.logger.warn({ err: { message: firstLine(String((err as Error)?.message ?? err)) } }, 'rollback failed');
    }
  }

  /** True while {@link transaction} is running. */
  get busy(): boolean {
    return this.inTransaction;
  }

  /**
   * Apply the numbered migrations of `sql/warehouse/` that are not yet recorded in
   * `etl.schema_migrations`, each in its own transaction, recording the build
   * ({@link BUILD_VERSION}) that applied each one.
   *
   * A warehouse holding a migration this build does not know was written by a newer build:
   * it is refused before anything is written (docs/contracts.md "Warehouse tables").
   * @throws {WarehouseError} a newer build's warehouse (exit 7), or a DuckDB failure
   */
  async migrate(dir: string = WAREHOUSE_SQL_DIR): Promise<string[]> {
    const unknown = await this.unknownMigrations(dir);
    if (unknown.length > 0) throw newerWarehouseError(this.path, unknown, dir);
    await this.run(
      'create schema if not exists etl; create table if not exists etl.schema_migrations (version integer primary key, name varchar not null, applied_at timestamptz not null, build varchar)',
    );
    const applied = new Set((await this.all<{ version: number }>('select version from etl.schema_migrations')).map((r) => r.version));
    const done: string[] = [];
    for (const file of migrationFiles(dir)) {
      const version = Number.parseInt(file, 10);
      if (applied.has(version)) continue;
      const sql = readFileSync(join(dir, file), 'utf8');
      await this.transaction(async () => {
        await this.run(sql);
        await this.run('insert into etl.schema_migrations (version, name, applied_at) values (?, ?, now())', [version, file]);
        if (await this.hasBuildColumn()) {
          await this.run('update etl.schema_migrations set build = ? where version = ?', [BUILD_VERSION, version]);
        }
      });
      done.push(file);
    }
    if (done.length > 0) this.logger.info({ migrations: done, build: BUILD_VERSION }, 'warehouse migrated');
    return done;
  }

  /**
   * The migrations recorded in `etl.schema_migrations` that `sql/warehouse/` of this build does
   * not hold (a newer build applied them), oldest first; empty for a new or a known warehouse.
   * Reads only: safe on a read-only handle (`status` warns with {@link newerWarehouseMessage}).
   * @throws {WarehouseError}
   */
  async unknownMigrations(dir: string = WAREHOUSE_SQL_DIR): Promise<AppliedMigration[]> {
    const exists = await this.one<{ n: bigint }>(
      "select count(*) as n from duckdb_tables() where database_name = current_database() and schema_name = 'etl' and table_name = 'schema_migrations'",
    );
    if ((exists?.n ?? 0n) === 0n) return [];
    const known = new Set(migrationFiles(dir).map((f) => Number.parseInt(f, 10)));
    const build = (await this.hasBuildColumn()) ? 'build' : 'null';
    const rows = await this.all<{ version: number; name: string; build: string | null; applied_at: string }>(
      `select version, name, ${build} as build, strftime(applied_at, '%Y-%m-%dT%H:%M:%SZ') as applied_at
       from etl.schema_migrations order by version`,
    );
    return rows
      .filter((r) => !known.has(r.version))
      .map((r) => ({ version: r.version, name: r.name, build: r.build, appliedAt: r.applied_at }));
  }

  private async hasBuildColumn(): Promise<boolean> {
    const r = await this.one<{ n: bigint }>(
      "select count(*) as n from duckdb_columns() where database_name = current_database() and schema_name = 'etl' and table_name = 'schema_migrations' and column_name = 'build'",
    );
    return (r?.n ?? 0n) > 0n;
  }

  /** `CHECKPOINT`: fold the WAL into the file (end of a good run; docs/architecture.md "DuckDB"). */
  async checkpoint(): Promise<void> {
    await this.run('checkpoint');
  }

  /**
   * While `fn` runs, an abort of `signal` interrupts the statement in flight (DuckDB's
   * `interrupt`): it fails at once and its transaction rolls back, so a signal during a long
   * transform or export stops the run within moments instead of after the statement
   * (docs/contracts.md "Exit codes" 130 / 143). The connection stays usable afterwards.
   */
  async interruptible<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    if (signal === undefined) return fn();
    // DuckDB forgets an interrupt that arrives between statements: statements check the signal too.
    const onAbort = (): void => this.conn.interrupt();
    signal.addEventListener('abort', onAbort, { once: true });
    const outer = this.stopSignal;
    this.stopSignal = signal;
    try {
      return await fn();
    } finally {
      this.stopSignal = outer;
      signal.removeEventListener('abort', onAbort);
    }
  }

  private throwIfStopped(): void {
    if (this.stopSignal?.aborted) {
      const reason: unknown = this.stopSignal.reason;
      throw reason instanceof Error ? reason : new WarehouseError('stopped');
    }
  }

  /** Escape hatch for the writers in this folder: the raw connection. */
  connection(): DuckDBConnection {
    return this.conn;
  }

  /** Close the connection and the instance (releases the file lock). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      this.conn.closeSync();
    } finally {
      this.instance.closeSync();
    }
  }
}

/** One row of `etl.schema_migrations`: a migration a build applied to the warehouse. */
export interface AppliedMigration {
  version: number;
  /** The migration's file name, e.g. `008_schema_migrations_build.sql`. */
  name: string;
  /** `package.json` version of the build that applied it; null before builds were recorded (migration 008). */
  build: string | null;
  /** When it was applied, ISO 8601 UTC. */
  appliedAt: string;
}

/**
 * The `package.json` version of this build, recorded with each migration it applies
 * (`etl.schema_migrations.build`) and named when a newer build's warehouse is refused.
 */
export const BUILD_VERSION: string = readBuildVersion();

function readBuildVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The numbered migration files of `dir` (`NNN_name.sql`), in order. */
function migrationFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
}

/**
 * What to say about a warehouse that a newer build migrated: the newest migration this build
 * does not know, the build that applied it, and this build's own version and newest migration.
 */
export function newerWarehouseMessage(path: string, unknown: readonly AppliedMigration[], dir: string = WAREHOUSE_SQL_DIR): string {
  const newest = unknown[unknown.length - 1]!;
  // The file's own text: escaped and capped, like any value read from a file.
  const quoted = (v: string, max: number): string => JSON.stringify(v).slice(1, -1).slice(0, max);
  const by = newest.build === null ? 'a newer build' : `recruit-etl ${quoted(newest.build, 64)}`;
  const ours =
    migrationFiles(dir)
      .at(-1)
      ?.replace(/\.sql$/, '') ?? 'none';
  const names = quoted(newest.name, 120);
  return (
    `the warehouse ${path} is at schema version ${newest.version} (${names}, applied ${newest.appliedAt} by ${by}), ` +
    `which this build (recruit-etl ${BUILD_VERSION}, newest migration ${ours}) does not know`
  );
}

/**
 * Open `abs` read-only and refuse it when a newer build migrated it: nothing of the file or
 * its WAL is written.
 * @throws {WarehouseError} a newer build's warehouse (exit 7); {@link LockError} (exit 5)
 */
async function refuseNewerWarehouse(abs: string): Promise<void> {
  const ro = await Warehouse.open(abs, { readOnly: true, memoryLimit: '256MB' });
  try {
    const unknown = await ro.unknownMigrations();
    if (unknown.length > 0) throw newerWarehouseError(abs, unknown, WAREHOUSE_SQL_DIR);
  } finally {
    await ro.close();
  }
}

function newerWarehouseError(path: string, unknown: readonly AppliedMigration[], dir: string): WarehouseError {
  return new WarehouseError(newerWarehouseMessage(path, unknown, dir), {
    hint: 'nothing was written; run the newer build against this warehouse, or restore a copy this build wrote (docs/contracts.md "Warehouse tables")',
  });
}

/** Quote an SQL string literal (for paths in COPY / read_csv, which take no parameters). */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
