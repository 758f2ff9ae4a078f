/**
 * The transform is killed anywhere and run again (docs/contracts.md guarantee 2, docs/incremental.md
 * "Killed anywhere"): a warehouse built once, then a night of new events (new patients, late
 * statuses of old ones, a redelivery, a new stream); the built CLI's `transform` is SIGKILLed at
 * each transform failpoint, in the incremental and in the full-refresh transform; after each kill,
 * a `transform` run to completion leaves every model equal, row for row, to a `--full-refresh`
 * of the same raw data.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FailpointName } from '../../src/failpoints.js';
import { runTransform } from '../../src/transform/runTransform.js';
import { Warehouse } from '../../src/warehouse/Warehouse.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { FIXTURE_EVENTS, SITE_SNAPSHOTS_SQL, insertRawEventsSql, type RawEventRow } from '../integration/models/fixture.js';

const POINTS: FailpointName[] = ['transform.before', 'transform.mid-models', 'transform.before-commit'];

/** The night: events for new patients, late statuses of old ones, a redelivery, a second stream. */
function night(): RawEventRow[] {
  const at = '2024-03-05T00:00:00.000Z';
  const msg = (subject: string, extra: Record<string, unknown>) => ({ trialId: 'T1', referralSubjectId: subject, siteId: 'S1', ...extra });
  return [
    {
      stream_id: 'stream-a',
      stream_position: 500,
      event_id: 'n1',
      event_type: 'v1.patient.created',
      published_time: '2024-02-01T10:01:00Z',
      message: msg('p9', {
        referralReceivedTime: '2024-02-01T09:00:00Z',
        createdTime: '2024-02-01T10:00:00Z',
        patientStatus: 'potentialCandidate',
      }),
      extracted_at: at,
    },
    {
      stream_id: 'stream-a',
      stream_position: 501,
      event_id: 'n2',
      event_type: 'v1.patient.statusChanged',
      published_time: '2024-02-20T10:01:00Z',
      message: msg('p1', { patientStatus: 'screenFailure', statusChangedTime: '2024-01-03T10:00:00Z' }),
      extracted_at: at,
    },
    { ...FIXTURE_EVENTS[5]!, stream_id: 'stream-a', stream_position: 502, extracted_at: at },
    {
      stream_id: 'stream-c',
      stream_position: 1,
      event_id: 'n3',
      event_type: 'v1.patient.statusChanged',
      published_time: '2024-02-21T10:01:00Z',
      message: msg('p2', { patientStatus: 'dropped', statusChangedTime: '2024-02-21T10:00:00Z' }),
      extracted_at: at,
    },
  ];
}

async function modelNames(wh: Warehouse): Promise<string[]> {
  const rows = await wh.all<{ name: string }>(
    `select table_name as name from information_schema.tables where table_schema = 'main' order by 1`,
  );
  return rows.map((r) => r.name).filter((n) => !n.startsWith('int_delta_'));
}

/** Models that differ from a full refresh of the same raw data (the file is changed: a copy is used). */
async function differsFromFullRefresh(db: string, dir: string, label: string): Promise<string[]> {
  const copy = join(dir, `${label}-check.duckdb`);
  copyFileSync(db, copy);
  const wh = await Warehouse.open(copy, { threads: 2 });
  try {
    const names = await modelNames(wh);
    await wh.run('create schema snap');
    for (const n of names) await wh.run(`create table snap."${n}" as select * from main."${n}"`);
    await runTransform(wh, { fullRefresh: true });
    const out: string[] = [];
    for (const n of names) {
      const r = await wh.all<{ c: bigint }>(
        `select count(*) as c from ((select * from snap."${n}" except all select * from main."${n}") union all (select * from main."${n}" except all select * from snap."${n}"))`,
      );
      if (Number(r[0]!.c) > 0) out.push(n);
    }
    return out;
  } finally {
    await wh.close();
  }
}

/** Statuses of the runs recorded in `db` (the base warehouse has none: it is built in process), oldest first. */
async function runStatuses(db: string): Promise<string[]> {
  const wh = await Warehouse.open(db, { readOnly: true, threads: 1 });
  try {
    return (await wh.all<{ status: string }>('select status from etl.runs order by started_at')).map((r) => r.status);
  } finally {
    await wh.close();
  }
}

describe('transform killed anywhere, then run again, equals a full refresh', () => {
  const tmp = tempDir('recruit-etl-transform-crash-');
  const base = join(tmp.dir, 'base.duckdb');
  afterAll(() => tmp.cleanup());

  beforeAll(async () => {
    const wh = await Warehouse.open(base, { threads: 2 });
    try {
      await wh.migrate();
      await wh.run(insertRawEventsSql(FIXTURE_EVENTS));
      await wh.run(SITE_SNAPSHOTS_SQL);
      await runTransform(wh);
      await wh.run(insertRawEventsSql(night()));
      await wh.checkpoint();
    } finally {
      await wh.close();
    }
  });

  for (const fullRefresh of [false, true]) {
    for (const point of POINTS) {
      const label = `${point}${fullRefresh ? '-full' : ''}`;
      test(`SIGKILL at ${point}${fullRefresh ? ' (--full-refresh)' : ''}, then transform`, async () => {
        const db = join(tmp.dir, `${label}.duckdb`);
        copyFileSync(base, db);
        const args = ['transform', '--db', db, ...(fullRefresh ? ['--full-refresh'] : [])];
        const killed = await runCli(args, { RECRUIT_ETL_FAILPOINT: `${point}:1` });
        expect(killed.signal, `${killed.stdout}\n${killed.stderr}`).toBe('SIGKILL');
        // The run row agrees with the ending (docs/contracts.md guarantee 2): killed, it stays running …
        expect(await runStatuses(db)).toEqual(['running']);
        const again = await runCli(['transform', '--db', db]);
        expect(again.code, again.stderr).toBe(0);
        // … and the next command closes it as abandoned; its own row says succeeded.
        expect(await runStatuses(db)).toEqual(['abandoned', 'succeeded']);
        // the killed transform committed nothing: the rerun is incremental and reads the whole night
        expect(again.stdout).toMatch(/"mode":"incremental"/);
        expect(again.stdout).toMatch(/"newDeliveries":4/);
        expect(await differsFromFullRefresh(db, tmp.dir, label)).toEqual([]);
      }, 120_000);
    }
  }
});
