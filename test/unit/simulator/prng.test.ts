import { describe, expect, it } from 'vitest';
import { eventIdAt, eventIndexOfId } from '../../../packages/mock-api/src/eventIds.js';
import { lowbias32, lowbias32Inverse, Rng } from '../../../packages/mock-api/src/prng.js';

describe('Rng', () => {
  it('gives the same sequence for the same seed and stream', () => {
    const a = new Rng(42, 3);
    const b = new Rng(42, 3);
    const xs = Array.from({ length: 50 }, () => a.u32());
    const ys = Array.from({ length: 50 }, () => b.u32());
    expect(xs).toEqual(ys);
  });

  it('gives different sequences for other seeds or streams', () => {
    const base = Array.from(
      { length: 8 },
      (
        (r) => () =>
          r.u32()
      )(new Rng(1)),
    );
    const seed2 = Array.from(
      { length: 8 },
      (
        (r) => () =>
          r.u32()
      )(new Rng(2)),
    );
    const stream2 = Array.from(
      { length: 8 },
      (
        (r) => () =>
          r.u32()
      )(new Rng(1, 1)),
    );
    expect(seed2).not.toEqual(base);
    expect(stream2).not.toEqual(base);
  });

  it('keeps int() within bounds and hits both ends', () => {
    const r = new Rng(9);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const x = r.int(3, 6);
      expect(x).toBeGreaterThanOrEqual(3);
      expect(x).toBeLessThanOrEqual(6);
      seen.add(x);
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6]);
  });
});

describe('event ids', () => {
  it('lowbias32Inverse inverts lowbias32', () => {
    const r = new Rng(5);
    for (let i = 0; i < 10_000; i++) {
      const x = r.u32();
      expect(lowbias32Inverse(lowbias32(x))).toBe(x);
    }
  });

  it('are UUID-shaped, unique, not ordered like the stream, and map back to their index', () => {
    const ids = Array.from({ length: 20_000 }, (_, i) => eventIdAt(7, i));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const sorted = [...ids].sort();
    expect(sorted).not.toEqual(ids);
    for (const i of [0, 1, 2, 999, 19_999]) expect(eventIndexOfId(7, ids[i]!)).toBe(i);
  });

  it('rejects ids of another seed and garbage', () => {
    expect(eventIndexOfId(8, eventIdAt(7, 10))).toBeUndefined();
    expect(eventIndexOfId(7, 'not-an-id')).toBeUndefined();
    const id = eventIdAt(7, 10);
    expect(eventIndexOfId(7, id.slice(0, -1) + (id.endsWith('0') ? '1' : '0'))).toBeUndefined();
  });
});
