/**
 * Failpoints for the crash tests (docs/contracts.md guarantee 2): named places in the pipeline
 * where a test can make the process kill itself with SIGKILL, the way a power cut or the
 * OOM killer would. Inert unless `RECRUIT_ETL_FAILPOINT` is set, which only tests do.
 *
 * Format: `RECRUIT_ETL_FAILPOINT=<name>:<n>` kills the process the n-th time (1-based)
 * `<name>` is reached; `<name>:<n>:throw` throws a {@link WarehouseError} there instead, as a
 * disk that refuses a write would (exit 7). Names: see {@link FailpointName}.
 *
 * @module
 */
import { WarehouseError } from './errors.js';

/** The named failpoints, in pipeline order. */
export type FailpointName =
  | 'extract.before-append' // inside the batch transaction, nothing written yet
  | 'extract.mid-append' // page bodies appended to the staging table, raw.events not yet
  | 'extract.before-commit' // events and cursor written, COMMIT not yet sent
  | 'extract.after-commit' // batch committed
  | 'transform.before' // before the models are rebuilt
  | 'transform.mid-models' // inside the transform's transaction, the first incremental model built (or its rows replaced)
  | 'transform.before-commit' // every model and the watermark written, COMMIT not yet sent
  | 'export.mid-file' // a Parquet file written under its temporary name in the new snapshot folder, not renamed
  | 'export.before-swap' // the new snapshot folder complete (files and manifest), `current` not swapped yet
  | 'run.before-checkpoint' // every stage done, before CHECKPOINT (the run still `running` in etl.runs)
  | 'publish.mid-copy' // the read-only copy half written
  | 'run.before-metrics' // the copy written (recording the run succeeded in it), not renamed; the metrics file not written
  | 'run.before-succeeded' // the metrics file written and the copy in place (the previous one kept aside); etl.runs not yet told the run succeeded
  | 'lake.mid-publish' // inside the lake's transaction: the raw delta appended, models and watermark not yet
  | 'lake.before-commit'; // the lake's transaction complete (raw, models, watermark, views), COMMIT not yet sent

const spec = process.env['RECRUIT_ETL_FAILPOINT'];
const [armedName, armedCount, armedMode] = spec ? spec.split(':') : [];
const target = Number(armedCount ?? '1');
let hits = 0;

/**
 * Mark a place; kills the process with SIGKILL when this failpoint is armed and reached
 * for the configured time. A no-op otherwise.
 * @throws {WarehouseError} instead of the kill, when armed with `:throw`
 */
export function failpoint(name: FailpointName): void {
  if (armedName !== name) return;
  hits += 1;
  if (hits !== target) return;
  if (armedMode === 'throw') throw new WarehouseError(`failpoint ${name} (a test's injected failure)`);
  process.kill(process.pid, 'SIGKILL');
}
