/**
 * Event ids of the simulated stream. The id of the event at a stream index is a pure
 * function of (seed, index): UUID-shaped, opaque and not sortable by stream order
 * (docs/upstream.md "Event envelope": "id … Pagination is keyed on it"). Its first 32 bits are an invertible
 * permutation of the index, so an id can be mapped back to its position without any
 * lookup table (fast `startingAfter` and cursor checks, also for 10 million events).
 *
 * @module
 */
import { lowbias32, lowbias32Inverse } from './prng.js';

const HEX2: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

function hex8(x: number): string {
  return HEX2[(x >>> 24) & 255]! + HEX2[(x >>> 16) & 255]! + HEX2[(x >>> 8) & 255]! + HEX2[x & 255]!;
}

function hex4(x: number): string {
  return HEX2[(x >>> 8) & 255]! + HEX2[x & 255]!;
}

function keyOf(seed: number): number {
  return lowbias32((seed ^ 0x5bd1e995) >>> 0);
}

/**
 * The id of the event at 0-based stream `index` for a data set generated from `seed`.
 *
 * @param seed the simulator seed
 * @param index 0-based stream position, 0 ≤ index < 2^32
 * @returns a lowercase UUID-v4-shaped string, e.g. `3f1c9a02-7be1-4c0d-9a51-0e2f6b7d8c11`
 */
export function eventIdAt(seed: number, index: number): string {
  const key = keyOf(seed);
  const head = lowbias32((index + key) >>> 0);
  const h1 = lowbias32((head ^ 0x68e31da4) >>> 0);
  const h2 = lowbias32((h1 + 0xb5297a4d) >>> 0);
  const h3 = lowbias32((h2 ^ key) >>> 0);
  return (
    hex8(head) +
    '-' +
    hex4(h1 >>> 16) +
    '-4' +
    hex4(h1 & 0xfff).slice(1) +
    '-' +
    (8 | ((h2 >>> 28) & 3)).toString(16) +
    hex4((h2 >>> 16) & 0xfff).slice(1) +
    '-' +
    hex4(h2 & 0xffff) +
    hex8(h3)
  );
}

/**
 * The stream index of an id made by {@link eventIdAt}, or `undefined` when `id` is not
 * such an id (unknown id). The caller still checks the index against the visible count.
 */
export function eventIndexOfId(seed: number, id: string): number | undefined {
  if (id.length !== 36 || !/^[0-9a-f]{8}-/.test(id)) return undefined;
  const head = Number.parseInt(id.slice(0, 8), 16);
  const index = (lowbias32Inverse(head) - keyOf(seed)) >>> 0;
  return eventIdAt(seed, index) === id ? index : undefined;
}
