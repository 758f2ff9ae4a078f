/**
 * `recruit-etl streams retire <stream-id>` (docs/contracts.md "Streams"): the work behind the
 * command, beside `streams reset` of `jobs.ts`.
 *
 * @module
 */
import type { Config } from '../config/config.js';
import type { Logger } from '../log/logger.js';
import { readStatus, type StreamStatus } from '../warehouse/readStatus.js';
import { StreamStore } from '../warehouse/StreamStore.js';
import { Warehouse } from '../warehouse/Warehouse.js';
import { settleKeptCopies } from '../warehouse/publishCopy.js';

/**
 * Retire one stream; its rows stay. A stream that has received pages needs `confirmed`
 * (`--yes`). A published copy a killed run left in place is settled first (`settleKeptCopies`).
 *
 * @returns the stream's status line, now `retired`
 * @throws {ConfigError} no such stream, or a stream with pages and no `--yes` (exit 2);
 *   {@link LockError} a run holds the file (exit 5); {@link WarehouseError} (exit 7)
 */
export async function retireStreamJob(config: Config, streamId: string, confirmed: boolean, logger: Logger): Promise<StreamStatus> {
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  try {
    await wh.migrate();
    await settleKeptCopies(wh);
    const { state, already } = await new StreamStore(wh).retire(streamId, confirmed);
    logger.debug(
      { stream: state.streamId, events: state.eventCount, already },
      already
        ? 'stream was already retired'
        : 'stream retired: its rows stay; no extract pages it unless a run uses its filter and origin again',
    );
    const line = (await readStatus(wh)).streams.find((s) => s.streamId === state.streamId);
    if (!line) throw new Error(`stream ${state.streamId} vanished`);
    return line;
  } finally {
    await wh.close();
  }
}
