/**
 * `recruit-etl streams` lists the streams (position, transformed position, cursor, status);
 * `streams reset <id>` starts one again from the first page: the old stream is retired and
 * keeps its rows, the next `run` pages the new one from the beginning, staging keeps one row
 * per event, and the incremental models still equal a full refresh (docs/contracts.md "Streams").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { MockApi } from '../../packages/mock-api/src/index.js';
import { runTransform } from '../../src/transform/runTransform.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { runCli } from '../helpers/cli.js';
import { envFor, startSim } from '../helpers/sim.js';
import { tempDir } from '../helpers/tmp.js';

interface StreamLine {
  streamId: string;
  origin: string;
  status: string;
  cursorState: string;
  events: number;
  transformedPosition: number | null;
}

describe('streams: list and reset', () => {
  let api: MockApi;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    api = await startSim({ seed: 4, patientsPerTrial: 20 });
    tmp = tempDir();
  });
  afterAll(async () => {
    await api.close();
    tmp.cleanup();
  });

  it('lists, resets, and the next run pages the stream again from the beginning', async () => {
    const db = join(tmp.dir, 'warehouse.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'exports') });
    expect((await runCli(['run'], env)).code).toBe(0);
    const listed = await runCli(['streams', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const streams = JSON.parse(listed.stdout) as StreamLine[];
    expect(streams).toHaveLength(1);
    const first = streams[0]!;
    expect(first).toMatchObject({ status: 'active', transformedPosition: first.events });
    expect(first.events).toBeGreaterThan(100);
    const text = await runCli(['streams'], env);
    expect(text.stdout).toMatch(/position\s+transformed/);
    expect(text.stdout).toContain(first.streamId);

    expect((await runCli(['streams', 'reset', 'no-such-stream'], env)).code).toBe(2);
    const reset = await runCli(['streams', 'reset', first.streamId, '--json'], env);
    expect(reset.code, reset.stderr).toBe(0);
    const fresh = JSON.parse(reset.stdout) as StreamLine;
    expect(fresh).toMatchObject({ streamId: `${first.streamId}_r1`, status: 'active', events: 0, transformedPosition: null });

    const again = await runCli(['run'], env);
    expect(again.code, again.stderr).toBe(0);
    const after = JSON.parse((await runCli(['streams', '--json'], env)).stdout) as StreamLine[];
    expect(after.find((s) => s.streamId === first.streamId)).toMatchObject({ status: 'retired', events: first.events });
    expect(after.find((s) => s.streamId === fresh.streamId)).toMatchObject({
      status: 'active',
      events: first.events,
      transformedPosition: first.events,
    });

    const wh = await Warehouse.open(db);
    try {
      const n = await wh.all<{ raw: bigint; staged: bigint; redelivered: bigint }>(
        `select (select count(*) from raw.events) as raw, (select count(*) from main.int_events_deduplicated) as staged,
                (select count(*) from main.int_events_deduplicated where delivery_count = 2 and stream_id = '${first.streamId}') as redelivered`,
      );
      expect(n[0]).toEqual({ raw: BigInt(2 * first.events), staged: BigInt(first.events), redelivered: BigInt(first.events) });
      // the incremental models after the reset equal a full refresh
      const names = (
        await wh.all<{ t: string }>(
          `select table_name as t from information_schema.tables where table_schema = 'main' and table_name not like 'int_delta_%'`,
        )
      ).map((r) => r.t);
      await wh.run('create schema snap');
      for (const t of names) await wh.run(`create table snap."${t}" as select * from main."${t}"`);
      await runTransform(wh, { fullRefresh: true });
      for (const t of names) {
        const d = await wh.all<{ c: bigint }>(
          `select count(*) as c from ((select * from snap."${t}" except all select * from main."${t}") union all (select * from main."${t}" except all select * from snap."${t}"))`,
        );
        expect(Number(d[0]!.c), t).toBe(0);
      }
    } finally {
      await wh.close();
    }
  }, 180_000);

  it('a mistyped --base-url left an "active, never polled" stream for ever: streams shows each origin, streams retire retires it; one with rows needs --yes', async () => {
    const db = join(tmp.dir, 'retire.duckdb');
    const env = envFor(api, db, { RECRUIT_ETL_EXPORT_DIR: join(tmp.dir, 'retire-exports') });
    expect((await runCli(['run'], env)).code).toBe(0);
    // The typo: a port nothing listens on. The run gives up at its deadline (exit 4).
    const typo = 'http://127.0.0.1:1';
    const bad = await runCli(['run', '--deadline', '2'], { ...env, RECRUIT_ETL_BASE_URL: typo });
    expect(bad.code, bad.stderr).toBe(4);
    const list = async (): Promise<StreamLine[]> => JSON.parse((await runCli(['streams', '--json'], env)).stdout) as StreamLine[];
    const both = await list();
    const good = both.find((s) => s.origin === new URL(api.baseUrl).origin)!;
    const stale = both.find((s) => s.origin === typo)!;
    expect(good).toMatchObject({ status: 'active', cursorState: 'caught up' });
    expect(stale).toMatchObject({ status: 'active', cursorState: 'never polled', events: 0 });
    const text = await runCli(['streams'], env);
    expect(text.stdout).toMatch(/origin/);
    expect(text.stdout).toContain(typo);

    // A stream with rows needs --yes; nothing changes without it.
    const refused = await runCli(['streams', 'retire', good.streamId], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`stream ${good.streamId} has received pages \\(${good.events} events\\).*--yes`));
    expect((await list()).find((s) => s.streamId === good.streamId)!.status).toBe('active');
    expect((await runCli(['streams', 'retire', 'no-such-stream'], env)).code).toBe(2);

    // The never-polled one is retired without confirmation; its line says so.
    const retired = await runCli(['streams', 'retire', stale.streamId, '--json'], env);
    expect(retired.code, retired.stderr).toBe(0);
    expect(JSON.parse(retired.stdout)).toMatchObject({ streamId: stale.streamId, status: 'retired', origin: typo });
    expect((await runCli(['streams', 'retire', stale.streamId], env)).code).toBe(0);

    // With --yes the one with rows is retired; its rows stay. A run of its filter and origin makes it active again.
    const yes = await runCli(['streams', 'retire', good.streamId, '--yes', '--json'], env);
    expect(yes.code, yes.stderr).toBe(0);
    expect(JSON.parse(yes.stdout)).toMatchObject({ streamId: good.streamId, status: 'retired', events: good.events });
    const status = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      rows: Record<string, number>;
      freshness: { cursorAgeSeconds: number | null };
    };
    expect(status.rows['raw.events']).toBe(good.events);
    expect(status.freshness.cursorAgeSeconds).toBeNull();
    expect((await runCli(['run'], env)).code).toBe(0);
    const after = await list();
    expect(after.find((s) => s.streamId === good.streamId)).toMatchObject({ status: 'active', events: good.events });
    expect(after.find((s) => s.streamId === stale.streamId)).toMatchObject({ status: 'retired' });
  }, 180_000);
});
