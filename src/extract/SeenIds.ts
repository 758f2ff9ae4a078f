/**
 * The id hashes already on a stream, in memory, so that the repeat check of a batch costs
 * what the batch brought, not what the stream holds (`docs/ingest.md` "Redeliveries").
 *
 * An open-addressing table of 32-bit fingerprints: a 64-bit `hash(event_id)` (DuckDB's, as
 * stored in `etl.event_ids`) picks its slot by its low half and is kept as its high half,
 * 4 bytes a slot at a load of at most 3/4 (8 MiB for a million events). A hit means "maybe
 * seen": the caller then compares exactly; a miss is certain, so nothing is ever dropped.
 * Adds are tentative until {@link SeenIds.commit}: {@link SeenIds.rollback} undoes the adds
 * of a rolled-back batch (clearing the newest slots first keeps older probe chains whole).
 *
 * @module
 */

/** Smallest table: 65,536 slots (256 KiB). */
const MIN_SLOTS = 1 << 16;

export class SeenIds {
  private slots: Uint32Array;
  private mask: number;
  private count = 0;
  /** Slots filled since the last commit or rollback. */
  private readonly pending: number[] = [];

  /** @param expected how many hashes the table will hold before it must grow */
  constructor(expected: number) {
    let n = MIN_SLOTS;
    while (n * 0.5 < expected) n *= 2;
    this.slots = new Uint32Array(n);
    this.mask = n - 1;
  }

  /**
   * Build the table from every hash of a stream, read a chunk at a time.
   * @param chunks high and low 32-bit halves of each hash, chunk by chunk
   * @param expected hashes the table should hold without growing (the stream's size and more)
   */
  static async load(chunks: AsyncIterable<[number[], number[]]>, expected: number): Promise<SeenIds> {
    const seen = new SeenIds(expected);
    for await (const [hi, lo] of chunks) for (let k = 0; k < hi.length; k += 1) seen.tryAdd(hi[k]!, lo[k]!);
    seen.commit();
    return seen;
  }

  /** Hashes held (committed and pending). */
  get size(): number {
    return this.count;
  }

  /** Whether `extra` more hashes fit without passing a load of 3/4. */
  fits(extra: number): boolean {
    return (this.count + extra) * 4 <= this.slots.length * 3;
  }

  /** Add a hash tentatively; false when it (or a hash with the same fingerprint in its chain) is there. */
  tryAdd(hi: number, lo: number): boolean {
    const fp = hi === 0 ? 1 : hi;
    let i = lo & this.mask;
    for (;;) {
      const v = this.slots[i]!;
      if (v === 0) break;
      if (v === fp) return false;
      i = (i + 1) & this.mask;
    }
    this.slots[i] = fp;
    this.pending.push(i);
    this.count += 1;
    return true;
  }

  /** Keep the adds since the last commit or rollback. */
  commit(): void {
    this.pending.length = 0;
  }

  /** Undo the adds since the last commit or rollback. */
  rollback(): void {
    for (let k = this.pending.length - 1; k >= 0; k -= 1) this.slots[this.pending[k]!] = 0;
    this.count -= this.pending.length;
    this.pending.length = 0;
  }
}
