/**
 * Contract breaks (docs/contracts.md guarantees 1, 4, 5; docs/ingest.md "How a page is read").
 *
 * A page that parses but breaks the contract fails the run at once with exit 6, not retried,
 * naming stream and page; nothing of that page (or its batch) is committed, earlier pages stay
 * and the cursor stays right after them. Re-deliveries of an id with the same payload are
 * stored once. A `nextPage` that is unsafe or does not advance is refused BEFORE any request
 * is sent to it: the bearer token never leaves the configured origin.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FaultRule, NextPageVariant } from '../../packages/mock-api/src/index.js';
import { FIXTURE_PAGE, useSimFixture } from '../helpers/simFixture.js';
import { expectExactly, expectPrefix, extractOnce, readDb, startTrap, type Outcome, type Trap } from '../helpers/faults.js';

const PAGE = FIXTURE_PAGE;

const fx = useSimFixture('recruit-etl-contract-', 'c');

type Rule = Omit<FaultRule, 'endpoint'>;

/**
 * Page `bad` (1-based) breaks the contract: exit 6 naming the page, pages before it kept,
 * exactly `requests` events requests in all (no retry, nothing sent after), then a clean run
 * resumes and completes exactly.
 */
async function expectContractBreak(
  rule: Rule,
  bad: number,
  requests: number | [number, number],
  extra: Record<string, unknown> = {},
): Promise<{ out: Outcome; db: string }> {
  fx.api.faults.add({ endpoint: 'events', after: bad - 1, ...rule });
  const db = fx.freshDb();
  const out = await extractOnce(fx.api, db, { pageSize: PAGE, ...extra });
  expect(out.exitCode, out.message).toBe(6);
  expect(out.message).toMatch(/^recruit-etl: error: stream [0-9a-z_-]+/i);
  expect(out.message).toContain(`page ${bad}`);
  if (typeof requests === 'number') expect(fx.api.stats.eventRequests).toBe(requests);
  else {
    expect(fx.api.stats.eventRequests).toBeGreaterThanOrEqual(requests[0]);
    expect(fx.api.stats.eventRequests).toBeLessThanOrEqual(requests[1]);
  }
  const state = await readDb(db);
  expectPrefix(state, fx.expected, (bad - 1) * PAGE, fx.api.truth.events);
  expect(state.runs.at(-1)!.status).toBe('failed');
  expect(state.runs.at(-1)!.error).toContain(`page ${bad}`);
  fx.api.faults.clear();
  const again = await extractOnce(fx.api, db, { pageSize: PAGE, ...extra });
  expect(again.exitCode, again.message).toBe(0);
  expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  return { out, db };
}

describe('pages that parse but break the contract: exit 6 at once, nothing of the page', () => {
  it('no pagination', async () => {
    await expectContractBreak({ kind: 'missingPagination' }, 4, 4);
  });

  it('events is not an array', async () => {
    await expectContractBreak({ kind: 'eventsNotArray' }, 4, 4);
  });

  it('an event without id (in the middle of the page)', async () => {
    await expectContractBreak({ kind: 'eventWithoutId' }, 4, 4);
  });

  it('two "events" keys (JSON.parse kept the last, the writer stored the first: events lost, exit 0 before)', async () => {
    const { out } = await expectContractBreak({ kind: 'duplicateEventsKey' }, 4, 4);
    expect(out.message).toContain('the page has the member "events" more than once');
  });

  it('an event with two "id" keys (event_id and envelope id disagreed before)', async () => {
    const { out } = await expectContractBreak({ kind: 'duplicateIdKey', event: 3 }, 4, 4);
    expect(out.message).toContain('event 3 has the member "id" more than once');
  });

  it('an event without id on the first page: nothing stored, no cursor', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'eventWithoutId' });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(6);
    expectPrefix(await readDb(db), fx.expected, 0, fx.api.truth.events);
  });
});

describe('re-delivered ids', () => {
  it('the same id twice within a page, same payload: stored once', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'duplicateIdWithinPage', after: 3, times: 2 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expect(fx.api.faults.fired().filter((f) => f.kind === 'duplicateIdWithinPage')).toHaveLength(2);
    expect(out.result!.extract!.duplicatesSkipped).toBe(2);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });

  it('an id of an earlier page again, same payload: stored once', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'duplicateIdAcrossPages', after: 2, times: 3 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(out.exitCode, out.message).toBe(0);
    expect(fx.api.faults.fired().filter((f) => f.kind === 'duplicateIdAcrossPages')).toHaveLength(3);
    expect(out.result!.extract!.duplicatesSkipped).toBe(3);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });

  it('an id of an earlier page again within one multi-page batch: stored once', async () => {
    fx.api.faults.add({ endpoint: 'events', kind: 'duplicateIdAcrossPages', after: 1, times: 2 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE, batchPages: 5 });
    expect(out.exitCode, out.message).toBe(0);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });

  it('an id of an earlier page again with ANOTHER payload: exit 6, nothing of that page', async () => {
    // Pages 5 to 7 may be fetched (never committed) while the batch of page 4 is written and
    // the next two wait their turn (docs/ingest.md "Batches").
    const { out } = await expectContractBreak({ kind: 'sameIdOtherPayload' }, 4, [4, 7]);
    expect(out.message).toMatch(/different payload/);
  });

  // Batches of 3 pages: batch 1 = pages 1-3 (committed), batch 2 = pages 4-6 with the bad page 5.
  // Batches of 4 pages: pages 1-4, then 5-8 with the bad page 7: pages 1-6 stay.
  it.each([
    {
      title: 'another payload inside a multi-page batch: exit 6, nothing of that page; the pages before it, in its batch too, are kept',
      kind: 'sameIdOtherPayload',
      batchPages: 3,
      badPage: 5,
    },
    {
      title: 'an event without an id in the middle of a batch: exit 6, the pages before it in its batch are kept',
      kind: 'eventWithoutId',
      batchPages: 4,
      badPage: 7,
    },
  ] as const)('$title', async ({ kind, batchPages, badPage }) => {
    fx.api.faults.add({ endpoint: 'events', kind, after: badPage - 1 });
    const db = fx.freshDb();
    const out = await extractOnce(fx.api, db, { pageSize: PAGE, batchPages });
    expect(out.exitCode, out.message).toBe(6);
    expect(out.message).toContain(`page ${badPage}`);
    expectPrefix(await readDb(db), fx.expected, (badPage - 1) * PAGE, fx.api.truth.events);
    fx.api.faults.clear();
    const again = await extractOnce(fx.api, db, { pageSize: PAGE, batchPages });
    expect(again.exitCode, again.message).toBe(0);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });
});

describe('unsafe or non-advancing nextPage: refused whole, never requested', () => {
  let trap: Trap;
  beforeEach(async () => {
    trap = await startTrap();
  });
  afterEach(async () => {
    await trap.close();
  });

  // Page 3 carries the bad nextPage: pages 1-2 stay, page 3 is refused, no 4th request anywhere.
  const cases: Array<[NextPageVariant, () => Partial<FaultRule>, RegExp]> = [
    ['otherOrigin', () => ({ url: trap.url }), /origin/],
    ['otherScheme', () => ({}), /origin/],
    ['otherPort', () => ({ port: trap.port }), /origin/],
    ['userInfo', () => ({}), /user info/],
    ['relative', () => ({}), /absolute/],
    ['unchanged', () => ({}), /equals the URL just requested/],
    ['cycle', () => ({}), /cycle/],
    ['oversizedUrl', () => ({ size: 100_000 }), /characters long/],
  ];

  it.each(cases)('nextPage %s: exit 6, pages 1-2 kept, the trap and the API receive nothing more', async (variant, params, why) => {
    const { out } = await expectContractBreak({ kind: 'nextPage', variant, ...params() }, 3, 3);
    expect(out.message).toMatch(why);
    expect(out.message).toMatch(/refused/);
    expect(trap.connections).toBe(0);
    expect(trap.requests).toEqual([]);
  });

  it('an empty poll (hasNextPage false, nextPage = the URL requested) is normal, not a cycle', async () => {
    const db = fx.freshDb();
    const first = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(first.exitCode, first.message).toBe(0);
    const again = await extractOnce(fx.api, db, { pageSize: PAGE });
    expect(again.exitCode, again.message).toBe(0);
    expect(again.result!.extract!.eventsLoaded).toBe(0);
    expectExactly(await readDb(db), fx.expected, fx.api.truth.events);
  });
});
