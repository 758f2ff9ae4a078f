import { describe, expect, it } from 'vitest';
import { EventStore } from '../../../packages/mock-api/src/eventStore.js';

function storeOf(spec: Array<[string, string]>): EventStore {
  const s = new EventStore(3, 2);
  spec.forEach(([type, trial], i) =>
    s.append(JSON.stringify({ id: s.idAt(i), eventType: type, message: { trialId: trial, n: i } }), s.typeIdx(type), s.trialIdx(trial)),
  );
  return s;
}

describe('EventStore.scan', () => {
  const s = storeOf([
    ['A', 'T1'],
    ['B', 'T1'],
    ['A', 'T2'],
    ['A', 'T1'],
    ['A', 'T1'],
    ['B', 'T1'],
  ]);
  const f = s.compileFilter(['A'], ['T1']);

  it('returns matching events in order and says whether more exist', () => {
    expect(s.scan(f, 0, 2, 6)).toEqual({ indexes: [0, 3], nextAfter: 4, hasNextPage: true });
    expect(s.scan(f, 4, 2, 6)).toEqual({ indexes: [4], nextAfter: 6, hasNextPage: false });
  });

  it('a full last page has hasNextPage false; an empty poll points after everything seen', () => {
    expect(s.scan(f, 3, 2, 6)).toEqual({ indexes: [3, 4], nextAfter: 5, hasNextPage: false });
    expect(s.scan(f, 5, 2, 6)).toEqual({ indexes: [], nextAfter: 6, hasNextPage: false });
  });

  it('only sees the visible prefix', () => {
    expect(s.scan(f, 0, 10, 3)).toEqual({ indexes: [0], nextAfter: 3, hasNextPage: false });
  });

  it('keeps the bytes as appended and grows past its capacity', () => {
    expect(s.count).toBe(6);
    expect(JSON.parse(s.jsonAt(5))).toEqual({ id: s.idAt(5), eventType: 'B', message: { trialId: 'T1', n: 5 } });
    expect(s.compileFilter(['nope'], ['T1']).typeMask.every((x) => x === 0)).toBe(true);
  });
});
