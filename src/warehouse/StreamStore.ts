/**
 * Durable stream state in `etl.streams` (docs/contracts.md "Streams"): one row per
 * stream, holding the last `nextPage` the server sent, byte for byte.
 *
 * @module
 */
import { ConfigError } from '../errors.js';
import type { Warehouse } from './Warehouse.js';

/** The identity and filter of a stream (see `src/extract/streamDefinition.ts`). */
export interface StreamDefinition {
  streamId: string;
  name: string;
  environment: string;
  /** Origin of `--base-url` (scheme://host:port). */
  apiOrigin: string;
  trialIds: string[];
  eventTypes: string[];
}

/** A row of `etl.streams`. */
export interface StreamState extends StreamDefinition {
  /** The stored durable cursor; null before the first committed page. */
  nextPage: string | null;
  hasNextPage: boolean | null;
  /** Rows of raw.events on this stream = the last stream_position. */
  eventCount: number;
  status: 'active' | 'retired';
}

interface StreamRow {
  stream_id: string;
  name: string;
  environment: string;
  api_origin: string;
  trial_ids: string[];
  event_types: string[];
  next_page: string | null;
  has_next_page: boolean | null;
  event_count: bigint;
  status: 'active' | 'retired';
}

function toState(r: StreamRow): StreamState {
  return {
    streamId: r.stream_id,
    name: r.name,
    environment: r.environment,
    apiOrigin: r.api_origin,
    trialIds: [...r.trial_ids],
    eventTypes: [...r.event_types],
    nextPage: r.next_page,
    hasNextPage: r.has_next_page,
    eventCount: Number(r.event_count),
    status: r.status,
  };
}

/** Reads and writes `etl.streams`. */
export class StreamStore {
  constructor(private readonly wh: Warehouse) {}

  /** Every stream, newest first. */
  async list(): Promise<StreamState[]> {
    const rows = await this.wh.all<StreamRow>('select * from etl.streams order by created_at desc, stream_id');
    return rows.map(toState);
  }

  /** The stream with this id, or undefined. */
  async get(streamId: string): Promise<StreamState | undefined> {
    const row = await this.wh.one<StreamRow>('select * from etl.streams where stream_id = ?', [streamId]);
    return row ? toState(row) : undefined;
  }

  /**
   * Make `def` the active stream of its environment and origin: create it (no cursor yet),
   * or reactivate it if it was retired (its stored cursor is durable, docs/upstream.md "Reading the stream" rule 5).
   * Every other active stream of the same environment and origin is retired; its rows stay.
   *
   * @throws {ConfigError} the warehouse already holds active streams of another environment
   *   (credentials are per environment, docs/upstream.md "Services and identifiers": never mix them silently)
   */
  async activate(def: StreamDefinition): Promise<{ state: StreamState; retired: string[] }> {
    return this.wh.transaction(async () => {
      const other = await this.wh.all<{ environment: string }>(
        "select distinct environment from etl.streams where status = 'active' and environment <> ?",
        [def.environment],
      );
      if (other.length > 0) {
        throw new ConfigError(
          `this warehouse holds active streams of environment '${other.map((o) => o.environment).join("', '")}', not '${def.environment}'`,
          { hint: 'use a separate --db (RECRUIT_ETL_DB) per environment' },
        );
      }
      const retired = await this.wh.all<{ stream_id: string }>(
        `update etl.streams set status = 'retired', retired_at = now(), updated_at = now()
         where status = 'active' and environment = ? and api_origin = ? and stream_id <> ?
         returning stream_id`,
        [def.environment, def.apiOrigin, def.streamId],
      );
      const existing = await this.get(def.streamId);
      if (!existing) {
        await this.wh.run(
          `insert into etl.streams (stream_id, name, environment, api_origin, trial_ids, event_types,
             next_page, has_next_page, event_count, status, created_at, updated_at)
           values (?, ?, ?, ?, ?::json::varchar[], ?::json::varchar[], null, null, 0, 'active', now(), now())`,
          [def.streamId, def.name, def.environment, def.apiOrigin, JSON.stringify(def.trialIds), JSON.stringify(def.eventTypes)],
        );
      } else if (existing.status !== 'active') {
        await this.wh.run("update etl.streams set status = 'active', retired_at = null, updated_at = now() where stream_id = ?", [
          def.streamId,
        ]);
      }
      const state = await this.get(def.streamId);
      if (!state) throw new Error(`stream ${def.streamId} vanished`);
      return { state, retired: retired.map((r) => r.stream_id) };
    });
  }

  /**
   * The id the stream of `baseId` (a filter's id, {@link StreamDefinition.streamId}) now goes
   * by: `baseId` itself, or its latest restart `<baseId>_r<n>` ({@link reset}).
   */
  async currentId(baseId: string): Promise<string> {
    const row = await this.wh.one<{ stream_id: string }>(
      `select stream_id from etl.streams
       where stream_id = ? or (starts_with(stream_id, ?) and regexp_full_match(substr(stream_id, ?), '[0-9]+'))
       order by created_at desc, stream_id desc limit 1`,
      [baseId, `${baseId}_r`, baseId.length + 3],
    );
    return row?.stream_id ?? baseId;
  }

  /**
   * Start a stream again from the beginning (docs/contracts.md "Streams"): a new stream
   * `<base>_r<n>` with the same filter and no cursor becomes active; the old one is retired and
   * its rows stay (staging keeps the first delivery of each event). The next extract of that
   * filter pages it from the first page.
   *
   * @returns the new stream
   * @throws {ConfigError} no stream has this id
   */
  async reset(streamId: string): Promise<StreamState> {
    return this.wh.transaction(async () => {
      const old = await this.get(streamId);
      if (!old) throw new ConfigError(`no stream ${streamId} in this warehouse`, { hint: 'list the streams with `recruit-etl streams`' });
      const base = streamId.replace(/_r[0-9]+$/, '');
      const gens = await this.wh.all<{ n: number | null }>(
        `select max(try_cast(substr(stream_id, ?) as integer)) as n from etl.streams where starts_with(stream_id, ?)`,
        [base.length + 3, `${base}_r`],
      );
      const next = (gens[0]?.n ?? 0) + 1;
      const newId = `${base}_r${next}`;
      await this.wh.run(
        `update etl.streams set status = 'retired', retired_at = now(), updated_at = now()
         where status = 'active' and (stream_id = ? or starts_with(stream_id, ?))`,
        [base, `${base}_r`],
      );
      // created_at strictly after the old stream's: staging orders streams by it.
      await this.wh.run(
        `insert into etl.streams (stream_id, name, environment, api_origin, trial_ids, event_types,
           next_page, has_next_page, event_count, status, created_at, updated_at)
         select ?, name, environment, api_origin, trial_ids, event_types, null, null, 0, 'active',
                greatest(now(), (select max(created_at) from etl.streams) + interval 1 millisecond), now()
         from etl.streams where stream_id = ?`,
        [newId, streamId],
      );
      const state = await this.get(newId);
      if (!state) throw new Error(`stream ${newId} vanished`);
      return state;
    });
  }

  /**
   * Retire a stream for good (docs/contracts.md "Streams"): the extract no longer pages it and
   * `status` no longer counts it; its rows stay, and so do the models built from them. A run
   * whose filter and origin are the stream's makes it active again, with its stored cursor
   * ({@link activate}). A stream that has received a page (it holds a cursor or rows) is
   * retired only when `confirmed` (`--yes`): one that never did (a mistyped `--base-url`)
   * costs nothing to retire.
   *
   * @returns the stream as it now is, and whether it was already retired
   * @throws {ConfigError} no stream has this id, or it has received pages and `confirmed` is false (exit 2)
   */
  async retire(streamId: string, confirmed: boolean): Promise<{ state: StreamState; already: boolean }> {
    return this.wh.transaction(async () => {
      const old = await this.get(streamId);
      if (!old) throw new ConfigError(`no stream ${streamId} in this warehouse`, { hint: 'list the streams with `recruit-etl streams`' });
      if (old.status === 'retired') return { state: old, already: true };
      const received = old.nextPage !== null || old.eventCount > 0;
      if (received && !confirmed) {
        throw new ConfigError(`stream ${streamId} has received pages (${old.eventCount} events); retiring it stops paging it`, {
          hint: 'its rows stay; run again with --yes to retire it',
        });
      }
      await this.wh.run("update etl.streams set status = 'retired', retired_at = now(), updated_at = now() where stream_id = ?", [
        streamId,
      ]);
      const state = await this.get(streamId);
      if (!state) throw new Error(`stream ${streamId} vanished`);
      return { state, already: false };
    });
  }

  /**
   * Store the cursor after a committed batch. Call inside the same transaction as the
   * batch's rows (docs/contracts.md guarantee 1).
   */
  async saveCursor(streamId: string, nextPage: string, hasNextPage: boolean, eventCount: number): Promise<void> {
    await this.wh.run(
      `update etl.streams set next_page = ?, has_next_page = ?, event_count = ?, updated_at = now(), last_polled_at = now()
       where stream_id = ?`,
      [nextPage, hasNextPage, eventCount, streamId],
    );
  }
}
