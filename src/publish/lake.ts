/**
 * Publish the warehouse into a DuckLake (docs/lakehouse.md): the raw events added since the
 * last publish and the reader-facing models, in ONE DuckLake transaction, so that readers on
 * any machine see the previous snapshot or the new one, never half.
 *
 * - Raw: `raw.events` rows past the per-stream watermark kept in the lake itself
 *   (`<schema>.publish_watermarks`), appended; the watermark moves in the same transaction,
 *   so a publish killed anywhere is redone whole by the next one.
 * - Models: the exported models (`fct_`, `dim_`, `mart_`, `dq_`: docs/exports.md) replaced
 *   when the local transform built them again since the last publish.
 * - One schema per pipeline (`--lake-schema`, default the `--environment` label) and the
 *   views of `all_pipelines` over every pipeline's tables with a `pipeline` column.
 * - One publisher per schema: a PostgreSQL advisory lock taken inside the transaction, and
 *   DuckLake's own conflict check at commit; either refusal is a {@link LockError} (exit 5).
 * - One pipeline per schema: the schema records the warehouse that publishes into it
 *   (`<schema>.publish_pipeline`); another warehouse is refused (exit 2) unless the operator
 *   says it is the same pipeline moved (`--lake-pipeline-moved`).
 * - Object stores: a `DATA_PATH` such as `s3://bucket/prefix/` is written through DuckDB's
 *   `httpfs`, with a temporary DuckDB secret made from the standard `AWS_*` variables.
 *
 * The extensions are only `LOAD`ed: from the project's `.duckdb/extensions` when `make
 * extensions` filled it, else from DuckDB's default folder (where `INSTALL` puts them).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { isExportedModel, loadModelCatalog } from '../catalog/catalog.js';
import { ConfigError, LockError, WarehouseError } from '../errors.js';
import { failpoint } from '../failpoints.js';
import { type Logger, silentLogger } from '../log/logger.js';
import type { StageProgress } from '../log/progress.js';
import { LOCAL_EXTENSION_DIR } from '../paths.js';
import { sqlString, Warehouse } from '../warehouse/Warehouse.js';

/**
 * The catalog name the lake is attached under in the job's session. It starts with `_`, which
 * no pipeline schema ({@link LAKE_SCHEMA_RE}) can; a warehouse file named like it is refused.
 */
export const LAKE_ALIAS = '_recruit_etl_lake';
/** The name of the temporary DuckDB secret made from the `AWS_*` variables (docs/lakehouse.md "Object storage"). */
export const LAKE_S3_SECRET = '_recruit_etl_lake_s3';
/** The schema of the cross-pipeline views (docs/lakehouse.md "Several pipelines"). */
export const ALL_PIPELINES_SCHEMA = 'all_pipelines';
/** The lake table of raw events in each pipeline's schema. */
export const LAKE_RAW_EVENTS = 'raw_events';
/** The lake table of per-stream watermarks in each pipeline's schema; also marks a schema as a pipeline. */
export const LAKE_WATERMARKS = 'publish_watermarks';
/** The lake table naming the warehouse that publishes into each pipeline's schema (docs/lakehouse.md "One schema, one pipeline"). */
export const LAKE_PIPELINE = 'publish_pipeline';
/**
 * Schema names a pipeline may not take: the views' schema, and the catalogs every DuckDB
 * session has (`memory` for an in-memory session, `system`, `temp`): a view naming such a
 * schema would be ambiguous in a reader's session.
 */
export const RESERVED_SCHEMAS: readonly string[] = [ALL_PIPELINES_SCHEMA, 'memory', 'system', 'temp'];
/** Files of `raw_events` from which a publish merges adjacent small files (docs/lakehouse.md "Compaction"). */
export const COMPACT_FILE_COUNT = 16;
/** A pipeline's schema name: lower-case letters, digits and `_`, starting with a letter. */
export const LAKE_SCHEMA_RE = /^[a-z][a-z0-9_]{0,62}$/;

/** Options of {@link publishToLake}. */
export interface PublishOptions {
  wh: Warehouse;
  /** DuckLake attach string, e.g. `ducklake:postgres:dbname=lake host=… user=…` (may hold a password: never logged). */
  lake: string;
  /** `DATA_PATH` of the lake (a folder, or an object-store URL); needed when the lake is created. */
  dataPath?: string;
  /** The pipeline's schema ({@link LAKE_SCHEMA_RE}). */
  schema: string;
  runId: string;
  /** The `--environment` label, recorded with the pipeline's identity (messages only). */
  environment?: string;
  /** The operator says this warehouse is the schema's pipeline moved (`--lake-pipeline-moved`): it takes the schema over. */
  pipelineMoved?: boolean;
  /** Where the `AWS_*` variables are read (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
  logger?: Logger;
  progress?: StageProgress;
}

/** What a publish did. */
export interface PublishResult {
  schema: string;
  /** The lake snapshot this publish committed. */
  snapshotId: number;
  /** Raw events appended. */
  events: number;
  /** Models written (empty when the local models did not change since the last publish). */
  models: string[];
  /** Of {@link models}, those merged by their `unique_key` (only the changed rows written); the others were replaced whole. */
  merged: string[];
  /** Streams whose watermark moved. */
  streams: number;
  /** True when the publish merged small Parquet files of `raw_events` afterwards. */
  compacted: boolean;
  durationMs: number;
}

/** `password=…` of a libpq keyword/value string (or a URI's user info) replaced, for logs and errors. */
export function redactLake(text: string): string {
  return text
    .replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1***')
    .replace(/(postgres(?:ql)?:\/\/[^:/@\s]+:)[^@\s]+@/gi, '$1***@');
}

/** The passwords a lake attach string holds (libpq `password=…`, a URI's user info), to register as secrets. */
export function lakePasswords(lake: string): string[] {
  const out: string[] = [];
  for (const m of lake.matchAll(/password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)/gi)) out.push(m[1]!.replace(/^'|'$/g, ''));
  for (const m of lake.matchAll(/postgres(?:ql)?:\/\/[^:/@\s]+:([^@\s]+)@/gi)) out.push(m[1]!);
  return out.filter((p) => p.length > 0);
}

/** The libpq connection string of a `ducklake:postgres:…` attach string, else undefined (another catalog). */
export function postgresConninfo(lake: string): string | undefined {
  const m = /^ducklake:postgres:(.*)$/s.exec(lake.trim());
  return m ? m[1] : undefined;
}

const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** Credentials and endpoint of an S3-compatible object store, from the standard `AWS_*` variables. */
export interface ObjectStoreCredentials {
  /** `AWS_ACCESS_KEY_ID`. */
  keyId: string;
  /** `AWS_SECRET_ACCESS_KEY`. */
  secret: string;
  /** `AWS_SESSION_TOKEN` (temporary credentials). */
  sessionToken?: string;
  /** `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`. */
  region: string;
  /** `host[:port]` of `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` (an S3-compatible server); absent: AWS itself. */
  endpoint?: string;
  /** False when the endpoint URL is `http://`. */
  useSsl: boolean;
  /** `path` with an endpoint (MinIO, Ceph, moto, …), `vhost` for AWS itself. */
  urlStyle: 'path' | 'vhost';
}

/** A `DATA_PATH` that DuckDB reaches through `httpfs` (an object store or HTTP), not a local folder. */
export const REMOTE_DATA_PATH_RE = /^(s3|s3a|s3n|gcs|gs|r2|https?):\/\//i;

const envValue = (env: Readonly<Record<string, string | undefined>>, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
};

/**
 * The object store's credentials from the standard AWS variables (docs/lakehouse.md "Object
 * storage"), or undefined when `AWS_ACCESS_KEY_ID` is not set.
 * @throws {ConfigError} `AWS_SECRET_ACCESS_KEY` missing, or an endpoint that is not an `http(s)://` URL (exit 2)
 */
export function objectStoreCredentials(env: Readonly<Record<string, string | undefined>>): ObjectStoreCredentials | undefined {
  const keyId = envValue(env, 'AWS_ACCESS_KEY_ID');
  if (keyId === undefined) return undefined;
  const secret = envValue(env, 'AWS_SECRET_ACCESS_KEY');
  if (secret === undefined)
    throw new ConfigError("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: the lake's object store needs both");
  const sessionToken = envValue(env, 'AWS_SESSION_TOKEN');
  const region = envValue(env, 'AWS_REGION') ?? envValue(env, 'AWS_DEFAULT_REGION') ?? 'us-east-1';
  const endpointVar = envValue(env, 'AWS_ENDPOINT_URL_S3') !== undefined ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL';
  const endpointUrl = envValue(env, endpointVar);
  if (endpointUrl === undefined)
    return { keyId, secret, ...(sessionToken ? { sessionToken } : {}), region, useSsl: true, urlStyle: 'vhost' };
  let url: URL | undefined;
  try {
    url = new URL(endpointUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '')) {
    throw new ConfigError(`${endpointVar} must be an http:// or https:// URL of the S3 endpoint, such as https://minio.internal:9000`);
  }
  return {
    keyId,
    secret,
    ...(sessionToken ? { sessionToken } : {}),
    region,
    endpoint: url.host,
    useSsl: url.protocol === 'https:',
    urlStyle: 'path',
  };
}

/** The values of the `AWS_*` variables that must never be logged (registered with the run's secrets). */
export function objectStoreSecrets(env: Readonly<Record<string, string | undefined>>): string[] {
  return ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_ACCESS_KEY_ID'].flatMap((n) => envValue(env, n) ?? []);
}

/**
 * Create the session's temporary S3 secret ({@link LAKE_S3_SECRET}: in memory, gone with the
 * process, never written to DuckDB's secret folder).
 * @throws {ConfigError} DuckDB refused it (exit 2); the message holds none of the values
 */
async function createObjectStoreSecret(wh: Warehouse, c: ObjectStoreCredentials): Promise<void> {
  const opts = [
    'type s3',
    'provider config',
    `key_id ${sqlString(c.keyId)}`,
    `secret ${sqlString(c.secret)}`,
    ...(c.sessionToken !== undefined ? [`session_token ${sqlString(c.sessionToken)}`] : []),
    `region ${sqlString(c.region)}`,
    ...(c.endpoint !== undefined ? [`endpoint ${sqlString(c.endpoint)}`] : []),
    `use_ssl ${c.useSsl}`,
    `url_style ${sqlString(c.urlStyle)}`,
  ];
  try {
    await wh.run(`create or replace temporary secret ${LAKE_S3_SECRET} (${opts.join(', ')})`);
  } catch (err) {
    let msg = firstLine(err);
    for (const v of [c.secret, c.sessionToken, c.keyId]) if (v !== undefined && v !== '') msg = msg.split(v).join('[redacted]');
    throw new ConfigError(`cannot create the DuckDB secret for the lake's object store from the AWS_* variables: ${msg}`, { cause: err });
  }
}

/**
 * LOAD the ducklake extension, and postgres and httpfs when asked (docs/lakehouse.md "Extensions").
 * @throws {ConfigError} an extension cannot be loaded (exit 2): `make extensions`, or `INSTALL` with internet access
 */
export async function loadLakeExtensions(wh: Warehouse, needPostgres: boolean, needHttpfs = false): Promise<void> {
  if (existsSync(LOCAL_EXTENSION_DIR)) await wh.run(`set extension_directory = ${sqlString(LOCAL_EXTENSION_DIR)}`);
  for (const ext of ['ducklake', ...(needPostgres ? ['postgres'] : []), ...(needHttpfs ? ['httpfs'] : [])]) {
    await loadExtension(wh, ext);
  }
}

/**
 * LOAD `httpfs` when it is there: for a lake whose data path is not given (`--lake-data-path`),
 * the `AWS_*` variables say it may be on an object store, but they may also be set for
 * something else on a lake in a local folder.
 * @returns whether it is loaded
 */
async function loadHttpfsIfThere(wh: Warehouse): Promise<boolean> {
  try {
    await wh.run('load httpfs');
    return true;
  } catch {
    return false;
  }
}

/** LOAD one extension. @throws {ConfigError} it cannot be loaded (exit 2) */
async function loadExtension(wh: Warehouse, ext: string): Promise<void> {
  try {
    await wh.run(`load ${ext}`);
  } catch (err) {
    throw new ConfigError(`cannot load the DuckDB extension ${ext} for --lake (RECRUIT_ETL_LAKE): ${(err as Error).message}`, {
      cause: err,
      hint: `run \`make extensions\` (fills .duckdb/extensions from PyPI), or with internet access run INSTALL ${ext} once in DuckDB`,
    });
  }
}

/**
 * Attach the lake as {@link LAKE_ALIAS} (data files as Parquet, never inlined in the catalog).
 * With an object-store `dataPath`, `httpfs` is loaded (exit 2 when it cannot be) and the S3
 * secret made from `AWS_*` first; without one, `AWS_ACCESS_KEY_ID` in `env` makes the secret
 * only when `httpfs` can be loaded (the variables may be set for something else).
 * @throws {ConfigError} an extension cannot be loaded, the AWS_* variables are invalid, or the warehouse's own catalog is named {@link LAKE_ALIAS} (exit 2)
 * @throws {WarehouseError} the catalog cannot be reached or opened (exit 7)
 */
export async function attachLake(
  wh: Warehouse,
  lake: string,
  dataPath: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<void> {
  const conninfo = postgresConninfo(lake);
  const creds = objectStoreCredentials(env);
  const remote = dataPath !== undefined && REMOTE_DATA_PATH_RE.test(dataPath);
  await loadLakeExtensions(wh, conninfo !== undefined, remote);
  // Without a remote --lake-data-path, the lake's stored data path decides: the secret is made
  // when httpfs is there, and a lake on an object store without httpfs fails at its first read.
  if (creds !== undefined && (remote || (await loadHttpfsIfThere(wh)))) await createObjectStoreSecret(wh, creds);
  // `attach if not exists` would take a database already attached under the alias for the lake.
  const taken = await wh.one<{ n: bigint }>(
    `select count(*) as n from duckdb_databases() where lower(database_name) in (lower(?), lower(?))`,
    [LAKE_ALIAS, `${LAKE_ALIAS}_pg`],
  );
  if (Number(taken?.n ?? 0) > 0) {
    throw new ConfigError(`the warehouse's catalog is named ${LAKE_ALIAS}, the name the job attaches the lake under`, {
      hint: 'rename the warehouse file (--db)',
    });
  }
  const opts = [`data_inlining_row_limit 0`, ...(dataPath !== undefined ? [`data_path ${sqlString(dataPath)}`] : [])];
  try {
    await wh.run(`attach ${sqlString(lake)} as ${LAKE_ALIAS} (${opts.join(', ')})`);
    if (conninfo !== undefined) await wh.run(`attach ${sqlString(conninfo)} as ${LAKE_ALIAS}_pg (type postgres)`);
  } catch (err) {
    await detachLake(wh);
    throw new WarehouseError(`cannot attach the lake ${redactLake(lake)}: ${redactLake(firstLine(err))}`, {
      cause: err,
      hint: 'check --lake (RECRUIT_ETL_LAKE) and that its PostgreSQL catalog is reachable; give --lake-data-path (RECRUIT_ETL_LAKE_DATA_PATH) when the lake is new; an object store needs AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (docs/lakehouse.md "Object storage")',
    });
  }
}

/** Detach the lake (and its lock connection); quiet, for `finally`. */
export async function detachLake(wh: Warehouse): Promise<void> {
  for (const alias of [`${LAKE_ALIAS}_pg`, LAKE_ALIAS]) {
    try {
      await wh.run(`detach database if exists ${alias}`);
    } catch {
      // Already gone with the instance.
    }
  }
  await wh.run(`drop temporary secret if exists ${LAKE_S3_SECRET}`).catch(() => undefined);
}

function firstLine(err: unknown): string {
  const cause = (err as { cause?: unknown })?.cause;
  const msg = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return msg.split('\n').find((l) => l.trim() !== '') ?? msg;
}

/** The whole message of an error and its causes (DuckLake's conflict reason is on the second line). */
function fullMessage(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error && parts.length < 5; e = (e as { cause?: unknown }).cause) parts.push(e.message);
  return parts.join('\n');
}

const CONFLICT_RE = /Transaction conflict|Failed to commit DuckLake transaction|could not serialize|deadlock detected/i;

/**
 * Publish into the lake (docs/lakehouse.md "Publishing"). The lake is attached for the call
 * and detached after it.
 *
 * @throws {LockError} another publisher holds this pipeline's schema, or committed to it meanwhile (exit 5): nothing is lost, the next publish sends the same delta
 * @throws {ConfigError} an extension cannot be loaded, or the schema name is not valid (exit 2)
 * @throws {WarehouseError} the lake cannot be reached or written (exit 7)
 */
export async function publishToLake(opts: PublishOptions): Promise<PublishResult> {
  const { wh, schema, runId } = opts;
  const logger = (opts.logger ?? silentLogger()).child({ stage: 'publish' });
  const started = Date.now();
  checkSchemaName(schema);
  const env = opts.env ?? process.env;
  const me = await warehouseIdentity(wh, opts.environment);
  const L = LAKE_ALIAS;
  const S = `${L}.${ident(schema)}`;
  const pg = postgresConninfo(opts.lake) !== undefined;
  await attachLake(wh, opts.lake, opts.dataPath, env);
  try {
    // Schemas first, each its own small commit (idempotent; creating them inside the publish
    // would make two first publishes of different pipelines conflict on the catalog).
    await wh.run(`create schema if not exists ${S}; create schema if not exists ${L}.${ALL_PIPELINES_SCHEMA}`);
    const models = (
      await wh.all<{ name: string }>(
        `select table_name as name from information_schema.tables where table_catalog = current_database() and table_schema = 'main' order by 1`,
      )
    )
      .map((r) => r.name)
      .filter(isExportedModel);
    const keys = incrementalKeys();
    const builtAt = (await wh.one<{ b: string | null }>(`select max(built_at)::varchar as b from etl.transform_state`))?.b ?? null;
    let result: PublishDone;
    try {
      result = await wh.transaction(() => publishInTransaction(opts, { me, pg, models, keys, builtAt }, logger));
    } catch (err) {
      throw publishFailure(err, schema);
    }
    // The committed snapshot: current_snapshot() inside the transaction is the one before it.
    const { unchanged, ...done } = result;
    const snap = unchanged
      ? undefined
      : await wh.one<{ id: bigint }>(`select max(snapshot_id) as id from ${L}.snapshots() where commit_message = ?`, [
          `publish ${schema} run ${runId}`,
        ]);
    // The views, in a session of their own (their names must not meet the warehouse's catalog).
    await refreshAllPipelinesViews(wh, { lake: opts.lake, dataPath: opts.dataPath, env, logger, schema, runId });
    const compacted = unchanged ? false : await compactRawEvents(wh, schema, logger);
    const out: PublishResult = { ...done, snapshotId: Number(snap?.id ?? done.snapshotId), compacted, durationMs: Date.now() - started };
    logger.info(
      {
        schema,
        snapshotId: out.snapshotId,
        events: out.events,
        models: out.models.length,
        streams: out.streams,
        compacted,
        durationMs: out.durationMs,
      },
      'published to the lake',
    );
    return out;
  } finally {
    await detachLake(wh);
  }
}

/** What the transaction of a publish did (before the snapshot id is read and the views written). */
type PublishDone = Omit<PublishResult, 'compacted' | 'durationMs'> & { unchanged: boolean };

/** The unique keys of the model catalog (incremental models, and the fct_ views over int_ tables): those models are merged by key. */
function incrementalKeys(): Map<string, readonly string[]> {
  return new Map(
    loadModelCatalog().models.flatMap((m) => (m.uniqueKey !== undefined && m.uniqueKey.length > 0 ? [[m.name, m.uniqueKey] as const] : [])),
  );
}

/**
 * The publish's DuckLake transaction: lock and claim the schema, append the raw delta past the
 * watermark, write the models when rebuilt since the last publish, move the watermark.
 * @throws {LockError} {@link lockSchema}
 * @throws {ConfigError} {@link claimSchema}
 */
async function publishInTransaction(
  opts: PublishOptions,
  p: { me: PipelineIdentity; pg: boolean; models: string[]; keys: ReadonlyMap<string, readonly string[]>; builtAt: string | null },
  logger: Logger,
): Promise<PublishDone> {
  const { wh, schema, runId } = opts;
  const { builtAt } = p;
  const L = LAKE_ALIAS;
  const S = `${L}.${ident(schema)}`;
  if (p.pg) await lockSchema(wh, schema);
  await claimSchema(wh, schema, p.me, opts.pipelineMoved === true, runId, logger);
  const exists = await wh.one<{ n: bigint }>(
    `select count(*) as n from duckdb_tables() where database_name = '${L}' and lower(schema_name) = ? and table_name = '${LAKE_WATERMARKS}'`,
    [schema],
  );
  if (Number(exists?.n ?? 0) === 0) {
    await wh.run(`create table ${S}.${LAKE_RAW_EVENTS} as select * from raw.events limit 0`);
    await wh.run(
      `create table ${S}.${LAKE_WATERMARKS} (stream_id varchar, stream_position bigint, models_built_at varchar, run_id varchar, published_at timestamptz)`,
    );
  }
  const before = await wh.all<{ stream_id: string; stream_position: bigint; models_built_at: string | null }>(
    `select stream_id, stream_position, models_built_at from ${S}.${LAKE_WATERMARKS}`,
  );
  // Append the delta of every stream past its watermark (docs/lakehouse.md "Publishing").
  const appended = await wh.one<{ n: bigint }>(
    `select count(*) as n from raw.events e left join ${S}.${LAKE_WATERMARKS} w using (stream_id) where e.stream_position > coalesce(w.stream_position, 0)`,
  );
  const lastBuilt = before[0]?.models_built_at ?? null;
  const replace = builtAt !== null && (lastBuilt !== builtAt || before.length === 0) ? p.models : [];
  if (Number(appended?.n ?? 0) === 0 && replace.length === 0 && before.length > 0) {
    // Nothing new: no snapshot at all (the transaction wrote nothing).
    const snap = await wh.one<{ id: bigint }>(`select id from ${L}.current_snapshot()`);
    return { schema, snapshotId: Number(snap?.id ?? -1), events: 0, models: [], merged: [], streams: 0, unchanged: true };
  }
  await wh.run(
    `call ${L}.set_commit_message('recruit-etl', ${sqlString(`publish ${schema} run ${runId}`)}, extra_info => ${sqlString(JSON.stringify({ pipeline: schema, runId }))})`,
  );
  await wh.run(
    `insert into ${S}.${LAKE_RAW_EVENTS} by name select e.* from raw.events e left join ${S}.${LAKE_WATERMARKS} w using (stream_id) where e.stream_position > coalesce(w.stream_position, 0) order by e.stream_id, e.stream_position`,
  );
  opts.progress?.update({ done: Number(appended?.n ?? 0) });
  failpoint('lake.mid-publish');
  const merged: string[] = [];
  for (const m of replace) if (await writeModel(wh, schema, m, p.keys.get(m))) merged.push(m);
  const marks = await wh.all<{ stream_id: string; p: bigint }>(
    'select stream_id, max(stream_position) as p from raw.events group by stream_id',
  );
  const moved = marks.filter((m) => before.find((b) => b.stream_id === m.stream_id)?.stream_position !== m.p).length;
  await wh.run(`delete from ${S}.${LAKE_WATERMARKS}`);
  await wh.run(
    `insert into ${S}.${LAKE_WATERMARKS} select stream_id, max(stream_position), ?, ?, now() from raw.events group by stream_id`,
    [builtAt ?? lastBuilt, runId],
  );
  failpoint('lake.before-commit');
  const snap = await wh.one<{ id: bigint }>(`select id from ${L}.current_snapshot()`);
  return {
    schema,
    snapshotId: Number(snap?.id ?? -1),
    events: Number(appended?.n ?? 0),
    models: replace,
    merged,
    streams: moved,
    unchanged: false,
  };
}

/**
 * @throws {ConfigError} not a valid pipeline schema ({@link LAKE_SCHEMA_RE}, not one of {@link RESERVED_SCHEMAS}; exit 2)
 */
function checkSchemaName(schema: string): void {
  if (LAKE_SCHEMA_RE.test(schema) && !RESERVED_SCHEMAS.includes(schema)) return;
  throw new ConfigError(
    `--lake-schema (RECRUIT_ETL_LAKE_SCHEMA): ${JSON.stringify(schema.slice(0, 80))} must be lower-case letters, digits and _ (starting with a letter), not ${RESERVED_SCHEMAS.join(', ')}`,
    {
      hint: 'the default is the --environment label in lower case: give --lake-schema',
    },
  );
}

/**
 * Take the schema's advisory lock on the catalog's PostgreSQL, inside the publish's transaction.
 * @throws {LockError} another publisher holds it (exit 5)
 */
async function lockSchema(wh: Warehouse, schema: string): Promise<void> {
  const got = await wh.one<{ got: boolean }>(
    `select got from postgres_query('${LAKE_ALIAS}_pg', ${sqlString(`select pg_try_advisory_xact_lock(hashtext('recruit-etl publish ${schema}')) as got`)})`,
  );
  if (got?.got !== true) throw lockError(schema, 'another publisher holds it now');
}

/** The error a failed publish transaction ends with: a lock or conflict is exit 5, a refusal of ours stays, the rest exit 7. */
function publishFailure(err: unknown, schema: string): Error {
  if (err instanceof LockError) return err;
  if (CONFLICT_RE.test(fullMessage(err))) return lockError(schema, 'another publisher committed to it while this one ran', err);
  if (err instanceof ConfigError) return err;
  return new WarehouseError(`publishing to the lake failed: ${redactLake(firstLine(err))}`, {
    cause: err,
    hint: 'nothing of this publish is in the lake; the next run publishes the same delta again',
  });
}

function lockError(schema: string, why: string, cause?: unknown): LockError {
  return new LockError(`the lake schema ${schema} is being published by another process: ${why}`, {
    ...(cause !== undefined ? { cause } : {}),
    hint: 'nothing is lost: this publish left the lake as it was and the next run publishes the same delta; wait for the other publisher (same --lake-schema) to finish',
  });
}

/**
 * Write model `m` into the pipeline's schema. A model with a `unique_key` whose lake table has
 * the same columns is **merged by key**: the keys of rows that differ on either side (changed,
 * new or gone) are deleted from the lake table and the local rows of those keys inserted, so
 * a night writes only what it changed (docs/lakehouse.md "Publishing"). Any other model, or a
 * changed shape, is replaced whole.
 *
 * @returns true when merged, false when replaced
 */
async function writeModel(wh: Warehouse, schema: string, m: string, key: readonly string[] | undefined): Promise<boolean> {
  const lakeTable = `${LAKE_ALIAS}.${ident(schema)}.${ident(m)}`;
  const local = `main.${ident(m)}`;
  const shape = async (catalog: string | null, sch: string): Promise<string> =>
    (
      await wh.all<{ c: string }>(
        `select column_name || ' ' || data_type as c from information_schema.columns where table_catalog = coalesce(?, current_database()) and table_schema = ? and table_name = ? order by ordinal_position`,
        [catalog, sch, m],
      )
    )
      .map((r) => r.c)
      .join(', ');
  if (key === undefined || key.length === 0) {
    await wh.run(`create or replace table ${lakeTable} as select * from ${local}`);
    return false;
  }
  const theirs = await shape(LAKE_ALIAS, schema);
  if (theirs === '' || theirs !== (await shape(null, 'main'))) {
    await wh.run(`create or replace table ${lakeTable} as select * from ${local}`);
    return false;
  }
  const k = key.map(ident).join(', ');
  const match = (alias: string): string => key.map((c) => `c.${ident(c)} is not distinct from ${alias}.${ident(c)}`).join(' and ');
  // Keys whose rows differ on the two sides (changed, new or gone): one join of the keys, each
  // with the sum of the 64-bit hashes of its whole rows and their count (a key may have several
  // rows; the columns and types are the same on both sides, checked above).
  const on = key.map((c) => `a.${ident(c)} is not distinct from b.${ident(c)}`).join(' and ');
  const side = (table: string): string => `(select ${k}, sum(hash(x)::hugeint) as h, count(*) as n from ${table} x group by all)`;
  const changed = `(select ${key.map((c) => `coalesce(a.${ident(c)}, b.${ident(c)}) as ${ident(c)}`).join(', ')}
    from ${side(local)} a full join ${side(lakeTable)} b on ${on}
    where a.h is distinct from b.h or a.n is distinct from b.n)`;
  // Delete every key whose rows differ; then every local key missing from the lake table is
  // one to insert (changed or new), and every key left is equal on both sides.
  await wh.run(`delete from ${lakeTable} t where exists (select 1 from ${changed} c where ${match('t')})`);
  await wh.run(`insert into ${lakeTable} select l.* from ${local} l where not exists (select 1 from ${lakeTable} c where ${match('l')})`);
  return true;
}

/** Who publishes: the warehouse's identity (docs/lakehouse.md "One schema, one pipeline"). */
export interface PipelineIdentity {
  /** `wh_` + 16 hex digits of a SHA-256 of the instant the warehouse file was created (its first migration): kept by copies and restores of the file, new for a new file. */
  warehouseId: string;
  /** The warehouse file's path (messages only). */
  warehouseFile: string;
  /** The `--environment` label as given. */
  environment: string;
  /** This warehouse's stream ids. */
  streams: string[];
}

/** The identity of the warehouse `wh` (read in the job's own session). */
export async function warehouseIdentity(wh: Warehouse, environment: string | undefined): Promise<PipelineIdentity> {
  const created = await wh.one<{ us: bigint | null }>('select epoch_us(min(applied_at)) as us from etl.schema_migrations');
  const streams = (await wh.all<{ stream_id: string }>('select stream_id from etl.streams order by created_at, stream_id')).map(
    (r) => r.stream_id,
  );
  const warehouseId = `wh_${createHash('sha256')
    .update(`recruit-etl warehouse ${String(created?.us ?? 0n)}`)
    .digest('hex')
    .slice(0, 16)}`;
  return { warehouseId, warehouseFile: wh.path, environment: environment ?? '', streams };
}

/**
 * Check that the pipeline's schema is this warehouse's, and record it when the schema is new
 * (inside the publish's transaction, under its lock). A schema published by an earlier build
 * (no {@link LAKE_PIPELINE} table) is claimed when every stream it holds is one of this
 * warehouse's. With `moved`, this warehouse takes the schema over.
 * @throws {ConfigError} the schema is another warehouse's (exit 2): nothing written
 */
async function claimSchema(
  wh: Warehouse,
  schema: string,
  me: PipelineIdentity,
  moved: boolean,
  runId: string,
  logger: Logger,
): Promise<void> {
  const S = `${LAKE_ALIAS}.${ident(schema)}`;
  const has = async (table: string): Promise<boolean> =>
    Number(
      (
        await wh.one<{ n: bigint }>(
          `select count(*) as n from duckdb_tables() where database_name = '${LAKE_ALIAS}' and lower(schema_name) = ? and table_name = ?`,
          [schema, table],
        )
      )?.n ?? 0,
    ) > 0;
  let owner: { warehouse_id: string; warehouse_file: string; environment: string; claimed_at: string } | undefined;
  let foreign: string[] = [];
  if (await has(LAKE_PIPELINE)) {
    owner = await wh.one(
      `select warehouse_id, warehouse_file, environment, claimed_at::varchar as claimed_at from ${S}.${LAKE_PIPELINE} order by claimed_at desc limit 1`,
    );
    if (owner?.warehouse_id === me.warehouseId) return;
  } else if (await has(LAKE_WATERMARKS)) {
    const theirs = (await wh.all<{ stream_id: string }>(`select stream_id from ${S}.${LAKE_WATERMARKS}`)).map((r) => r.stream_id);
    foreign = theirs.filter((s) => !me.streams.includes(s));
  }
  const someoneElse = owner !== undefined || foreign.length > 0;
  if (someoneElse && !moved) {
    const who =
      owner !== undefined
        ? `the warehouse ${owner.warehouse_file} (environment ${JSON.stringify(owner.environment)}, since ${owner.claimed_at})`
        : `another warehouse (streams ${foreign.slice(0, 3).join(', ')})`;
    throw new ConfigError(
      `the lake schema ${schema} belongs to another pipeline: ${who}; this warehouse ${me.warehouseFile} (environment ${JSON.stringify(me.environment)}) would mix its data into it`,
      {
        hint: 'give this pipeline its own schema (--lake-schema, or another --environment); if this warehouse replaces that one (the same pipeline moved or rebuilt), publish once with --lake-pipeline-moved',
      },
    );
  }
  if (someoneElse)
    logger.warn({ schema, previous: owner?.warehouse_id ?? null }, 'the lake schema now belongs to this warehouse (--lake-pipeline-moved)');
  if (!(await has(LAKE_PIPELINE)))
    await wh.run(
      `create table ${S}.${LAKE_PIPELINE} (warehouse_id varchar, warehouse_file varchar, environment varchar, claimed_at timestamptz, run_id varchar)`,
    );
  await wh.run(`delete from ${S}.${LAKE_PIPELINE}`);
  await wh.run(`insert into ${S}.${LAKE_PIPELINE} values (?, ?, ?, now(), ?)`, [me.warehouseId, me.warehouseFile, me.environment, runId]);
}

/**
 * The statements that (re)create the views of {@link ALL_PIPELINES_SCHEMA}: for each table
 * name of any pipeline schema, `UNION ALL BY NAME` over the pipelines that have it, with a
 * `pipeline` column. A view is written only when a pipeline is missing from it, so that
 * publishes of established pipelines never touch the shared schema.
 */
async function pendingViews(wh: Warehouse): Promise<string[]> {
  const L = LAKE_ALIAS;
  const tables = await wh.all<{ schema_name: string; table_name: string }>(
    `select t.schema_name, t.table_name from duckdb_tables() t
      where t.database_name = '${L}' and t.schema_name <> '${ALL_PIPELINES_SCHEMA}'
        and t.schema_name in (select schema_name from duckdb_tables() where database_name = '${L}' and table_name = '${LAKE_WATERMARKS}')
        and t.table_name not in ('${LAKE_WATERMARKS}', '${LAKE_PIPELINE}')
      order by 2, 1`,
  );
  const views = new Map(
    (
      await wh.all<{ view_name: string; sql: string }>(
        `select view_name, sql from duckdb_views() where database_name = '${L}' and schema_name = '${ALL_PIPELINES_SCHEMA}'`,
      )
    ).map((v) => [v.view_name, v.sql]),
  );
  const byTable = new Map<string, string[]>();
  for (const t of tables) byTable.set(t.table_name, [...(byTable.get(t.table_name) ?? []), t.schema_name]);
  const out: string[] = [];
  for (const [table, schemas] of byTable) {
    const existing = views.get(table);
    const marker = (s: string): string => `'${s}' AS pipeline`;
    if (existing !== undefined && schemas.every((s) => existing.includes(marker(s)))) continue;
    const body = schemas.map((s) => `SELECT ${marker(s)}, * FROM ${ident(s)}.${ident(table)}`).join(' UNION ALL BY NAME ');
    out.push(`create or replace view ${L}.${ALL_PIPELINES_SCHEMA}.${ident(table)} as ${body}`);
  }
  return out;
}

/**
 * Bring the views of {@link ALL_PIPELINES_SCHEMA} up to date, after the publish committed. The
 * views name `schema.table` only (readers attach the lake under any alias), and DuckDB binds a
 * view when it is created: in the job's session a schema named like the warehouse's catalog
 * (`production` in `production.duckdb`) would be ambiguous. So the views are written from a
 * session of their own, an in-memory DuckDB whose only catalogs are `memory`, `system`,
 * `temp` ({@link RESERVED_SCHEMAS}) and the lake. Best effort: a failure (a race with another
 * pipeline's publish) is logged and the next publish writes what is missing.
 */
async function refreshAllPipelinesViews(
  wh: Warehouse,
  o: {
    lake: string;
    dataPath: string | undefined;
    env: Readonly<Record<string, string | undefined>>;
    logger: Logger;
    schema: string;
    runId: string;
  },
): Promise<void> {
  let side: Warehouse | undefined;
  try {
    const statements = await pendingViews(wh);
    if (statements.length === 0) return;
    side = await Warehouse.open(':memory:');
    await attachLake(side, o.lake, o.dataPath, o.env);
    const s = side;
    await s.transaction(async () => {
      await s.run(
        `call ${LAKE_ALIAS}.set_commit_message('recruit-etl', ${sqlString(`all_pipelines views after publish ${o.schema} run ${o.runId}`)})`,
      );
      for (const sql of statements) await s.run(sql);
    });
    o.logger.info({ views: statements.length }, 'all_pipelines views written');
  } catch (err) {
    o.logger.warn({ err: { message: redactLake(firstLine(err)) } }, 'writing the all_pipelines views failed; the next publish writes them');
  } finally {
    if (side !== undefined) {
      await detachLake(side);
      await side.close();
    }
  }
}

/**
 * Merge adjacent small Parquet files of the pipeline's `raw_events` once it has
 * {@link COMPACT_FILE_COUNT} files or more (`ducklake_merge_adjacent_files`, its own snapshot;
 * the old files stay for time travel until snapshots are expired: docs/lakehouse.md
 * "Compaction"). Best effort: a failure is logged, the publish stands.
 */
async function compactRawEvents(wh: Warehouse, schema: string, logger: Logger): Promise<boolean> {
  try {
    const files = await wh.one<{ n: bigint }>(
      `select count(*) as n from ducklake_list_files('${LAKE_ALIAS}', '${LAKE_RAW_EVENTS}', schema => '${schema}')`,
    );
    if (Number(files?.n ?? 0) < COMPACT_FILE_COUNT) return false;
    await wh.run(`call ducklake_merge_adjacent_files('${LAKE_ALIAS}', '${LAKE_RAW_EVENTS}', schema => '${schema}')`);
    return true;
  } catch (err) {
    logger.warn({ err: { message: redactLake(firstLine(err)) } }, 'merging small files of the lake failed; the next publish tries again');
    return false;
  }
}

/**
 * The pipeline's schema: `--lake-schema`, else the `--environment` label in lower case with
 * every other character than a letter, digit or `_` made `_` (`production` → `production`).
 */
export function pipelineSchema(lakeSchema: string | undefined, environment: string): string {
  if (lakeSchema !== undefined) return lakeSchema;
  const s = environment.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return /^[a-z]/.test(s) ? s.slice(0, 63) : `p_${s}`.slice(0, 63);
}
