/**
 * Seeded pseudo-random numbers for the simulator: every random choice of the generated
 * data goes through {@link Rng}, so the same seed gives byte-identical data.
 *
 * @module
 */

const HEX2: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** 32-bit finaliser ("lowbias32", Chris Wellons); a bijection on uint32. */
export function lowbias32(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  return x >>> 0;
}

/** The inverse of {@link lowbias32}: `lowbias32Inverse(lowbias32(x)) === x` for every uint32. */
export function lowbias32Inverse(x: number): number {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x43021123) >>> 0;
  x = (x ^ (x >>> 15) ^ (x >>> 30)) >>> 0;
  x = Math.imul(x, 0x1d69e2a5) >>> 0;
  x = (x ^ (x >>> 16)) >>> 0;
  return x >>> 0;
}

/**
 * A small, fast, seeded generator (sfc32 seeded through splitmix32). Not cryptographic.
 * Two instances built with the same `(seed, stream)` produce the same sequence.
 */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /**
   * @param seed any integer (only its low 32 bits are used)
   * @param stream a label that derives an independent sequence from the same seed
   */
  constructor(seed: number, stream = 0) {
    let s = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
    const split = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = split();
    this.b = split();
    this.c = split();
    this.d = split();
    for (let i = 0; i < 12; i++) this.u32();
  }

  /** The next uniformly distributed uint32. */
  u32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A float in [min, max). */
  between(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A uniformly chosen element; throws RangeError on an empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty array');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** An element chosen with the given relative weights (same length as `items`). */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    let r = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i] ?? 0;
      if (r < 0) return items[i] as T;
    }
    return items[items.length - 1] as T;
  }

  /** A standard normal variate (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** A log-normal variate with the given median and shape `sigma`. */
  logNormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  /** Shuffles `items` in place (Fisher-Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const t = items[i] as T;
      items[i] = items[j] as T;
      items[j] = t;
    }
    return items;
  }

  /** `n` lowercase hex characters. */
  hex(n: number): string {
    let out = '';
    while (out.length < n) {
      const x = this.u32();
      out += HEX2[x & 255]! + HEX2[(x >>> 8) & 255]! + HEX2[(x >>> 16) & 255]! + HEX2[x >>> 24]!;
    }
    return out.length === n ? out : out.slice(0, n);
  }

  /** `n` characters of Crockford base32 (upper case, no I L O U). */
  base32(n: number): string {
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    let out = '';
    for (let i = 0; i < n; i++) out += alphabet[this.u32() & 31];
    return out;
  }
}
