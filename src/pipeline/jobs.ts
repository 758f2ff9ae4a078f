/**
 * The jobs behind the warehouse commands `status` and `streams reset`; the pipeline commands'
 * job is `runJob` (src/pipeline/runJob.ts over the stage table of src/pipeline/stages.ts),
 * re-exported here. The CLI only parses options and maps errors to exit codes
 * (docs/architecture.md "A thin CLI over a library core").
 *
 * @module
 */
import { LockError } from '../errors.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import { Warehouse } from '../warehouse/Warehouse.js';
import { readStatus, type StreamStatus, type WarehouseStatus } from '../warehouse/readStatus.js';
import { StreamStore } from '../warehouse/StreamStore.js';
import { publishedCopyPath, settleKeptCopies } from '../warehouse/publishCopy.js';
import { loadModelCatalog } from '../catalog/catalog.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export { runCommand, runJob, type JobContext, type JobResult, type RunFacts } from './runJob.js';
export { EXTRACT_SETTINGS, heldBatchSettings } from './stages.js';

/**
 * Read the warehouse state for `status` (read-only). While a run holds the live file, the
 * copy published by the last successful run is read instead, and the status says so
 * (`source: "published copy"`, `note`; docs/contracts.md "status --json").
 * @throws {LockError} a run holds the file and no copy was published yet (exit 5)
 * @throws {WarehouseError} the file cannot be read (exit 7)
 */
export async function statusJob(config: Config): Promise<WarehouseStatus> {
  let wh: Warehouse;
  let note: string | undefined;
  try {
    wh = await Warehouse.open(config.db, { readOnly: true, memoryLimit: config.memoryLimit });
  } catch (err) {
    // A run holds the live file: show the copy published by the last successful run.
    const copy = publishedCopyPath(resolve(config.db));
    if (!(err instanceof LockError) || !existsSync(copy)) throw err;
    wh = await Warehouse.open(copy, { readOnly: true, memoryLimit: config.memoryLimit });
    note = `a run holds ${config.db}; showing the copy published by the last successful run`;
  }
  try {
    const status = await readStatus(wh, loadModelCatalog().models);
    if (note) {
      status.source = 'published copy';
      status.note = note;
    }
    return status;
  } finally {
    await wh.close();
  }
}

/**
 * `recruit-etl streams reset <stream-id>`: start a stream again from the first page
 * (docs/contracts.md "Streams"); the old stream is retired and its rows stay. A published
 * copy a killed run left in place is settled first (`settleKeptCopies`).
 * @returns the new stream's status line
 * @throws {ConfigError} no such stream, {@link LockError} a run holds the file, {@link WarehouseError}
 */
export async function resetStreamJob(config: Config, streamId: string, logger: Logger): Promise<StreamStatus> {
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  try {
    await wh.migrate();
    await settleKeptCopies(wh);
    const state = await new StreamStore(wh).reset(streamId);
    logger.debug({ retired: streamId, stream: state.streamId }, 'stream reset: the next extract of its filter starts from the first page');
    const status = await readStatus(wh);
    const line = status.streams.find((s) => s.streamId === state.streamId);
    if (!line) throw new Error(`stream ${state.streamId} vanished`);
    return line;
  } finally {
    await wh.close();
  }
}
