/**
 * The simulator's append-only event stream: each envelope's JSON is rendered once into a
 * byte arena (off the V8 heap), with per-event type and trial indexes in typed arrays, so
 * a page is a scan over typed arrays plus a concatenation of cached byte slices.
 *
 * @module
 */
import { eventIdAt } from './eventIds.js';

const CHUNK_BYTES = 32 * 1024 * 1024;

/** A compiled filter: membership masks over the store's type and trial registries. */
export interface StreamFilter {
  /** The requested event types, as sent (docs/upstream.md "Reading the stream" `eventTypes`). */
  eventTypes: string[];
  /** The requested trial ids, as sent (docs/upstream.md "Reading the stream" `trialIds`). */
  trialIds: string[];
  typeMask: Uint8Array;
  trialMask: Uint8Array;
}

/** The result of scanning one page. */
export interface PageScan {
  /** 0-based stream indexes of the matching events, in stream order. */
  indexes: number[];
  /** How many stream events the next page starts after (a stream position, 0 = start). */
  nextAfter: number;
  /** True when more matching visible events exist beyond this page. */
  hasNextPage: boolean;
}

/** Append-only store of pre-rendered envelopes. */
export class EventStore {
  /** Number of events appended. */
  count = 0;
  private readonly chunks: Buffer[] = [];
  private current: Buffer = Buffer.alloc(0);
  private used = 0;
  private chunkOf: Uint16Array;
  private offsetOf: Uint32Array;
  private lengthOf: Uint32Array;
  private typeOf: Uint16Array;
  private trialOf: Uint16Array;
  private readonly typeIndex = new Map<string, number>();
  private readonly trialIndex = new Map<string, number>();
  /** Registered event types, by index. */
  readonly types: string[] = [];
  /** Registered trial ids, by index. */
  readonly trials: string[] = [];

  /**
   * @param seed the simulator seed (event ids are a function of seed and index)
   * @param capacity expected number of events (grows when exceeded)
   */
  constructor(
    readonly seed: number,
    capacity: number,
  ) {
    const n = Math.max(16, capacity);
    this.chunkOf = new Uint16Array(n);
    this.offsetOf = new Uint32Array(n);
    this.lengthOf = new Uint32Array(n);
    this.typeOf = new Uint16Array(n);
    this.trialOf = new Uint16Array(n);
  }

  /** The id of the event at 0-based `index`. */
  idAt(index: number): string {
    return eventIdAt(this.seed, index);
  }

  /** Index of a type string, registering it when new. */
  typeIdx(type: string): number {
    let i = this.typeIndex.get(type);
    if (i === undefined) {
      i = this.types.length;
      this.types.push(type);
      this.typeIndex.set(type, i);
    }
    return i;
  }

  /** Index of a trial id, registering it when new. */
  trialIdx(trialId: string): number {
    let i = this.trialIndex.get(trialId);
    if (i === undefined) {
      i = this.trials.length;
      this.trials.push(trialId);
      this.trialIndex.set(trialId, i);
    }
    return i;
  }

  /**
   * Appends one envelope's JSON text (which must carry `idAt(count)` as its id).
   *
   * @param json the envelope serialized once, UTF-8 safe
   * @param typeIdx from {@link typeIdx}
   * @param trialIdx from {@link trialIdx}
   */
  append(json: string, typeIdx: number, trialIdx: number): void {
    this.flush();
    const i = this.count;
    if (i >= this.chunkOf.length) this.grow(i * 2);
    const bytes = json.length * 3 <= this.current.length - this.used ? -1 : Buffer.byteLength(json);
    if (bytes > this.current.length - this.used) {
      if (this.current.length > 0) this.chunks.push(this.current.subarray(0, this.used));
      this.current = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
      this.used = 0;
    }
    const written = this.current.write(json, this.used, 'utf8');
    this.chunkOf[i] = this.chunks.length;
    this.offsetOf[i] = this.used;
    this.lengthOf[i] = written;
    this.typeOf[i] = typeIdx;
    this.trialOf[i] = trialIdx;
    this.used += written;
    this.count = i + 1;
  }

  private grow(n: number): void {
    const copy = <T extends Uint16Array | Uint32Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a);
      return b;
    };
    this.chunkOf = copy(this.chunkOf, (k) => new Uint16Array(k));
    this.offsetOf = copy(this.offsetOf, (k) => new Uint32Array(k));
    this.lengthOf = copy(this.lengthOf, (k) => new Uint32Array(k));
    this.typeOf = copy(this.typeOf, (k) => new Uint16Array(k));
    this.trialOf = copy(this.trialOf, (k) => new Uint16Array(k));
  }

  private pending: string[] = [];
  private pendingChars = 0;

  /**
   * Appends one envelope's JSON text that is pure ASCII (bytes = characters). Batched:
   * texts are written to the arena in blocks, which is several times faster than
   * {@link append} for millions of small events.
   */
  appendAscii(json: string, typeIdx: number, trialIdx: number): void {
    const i = this.count;
    if (i >= this.chunkOf.length) this.grow(i * 2);
    if (this.pendingChars + json.length > this.current.length - this.used) {
      this.flush();
      if (json.length > this.current.length - this.used) {
        if (this.current.length > 0) this.chunks.push(this.current.subarray(0, this.used));
        this.current = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, json.length));
        this.used = 0;
      }
    }
    this.chunkOf[i] = this.chunks.length;
    this.offsetOf[i] = this.used + this.pendingChars;
    this.lengthOf[i] = json.length;
    this.typeOf[i] = typeIdx;
    this.trialOf[i] = trialIdx;
    this.pending.push(json);
    this.pendingChars += json.length;
    this.count = i + 1;
    if (this.pending.length >= 256) this.flush();
  }

  /** Writes texts batched by {@link appendAscii} into the arena. */
  flush(): void {
    if (this.pending.length === 0) return;
    const text = this.pending.join('');
    const written = this.current.write(text, this.used, 'latin1');
    if (written !== text.length) throw new Error('EventStore: batch did not fit its chunk');
    this.used += written;
    this.pending = [];
    this.pendingChars = 0;
  }

  /** The JSON bytes of the event at `index` (a view, not a copy). */
  bytesAt(index: number): Buffer {
    if (this.pendingChars > 0) this.flush();
    const c = this.chunkOf[index]!;
    const chunk = c === this.chunks.length ? this.current : this.chunks[c]!;
    const off = this.offsetOf[index]!;
    return chunk.subarray(off, off + this.lengthOf[index]!);
  }

  /** The JSON text of the event at `index`. */
  jsonAt(index: number): string {
    return this.bytesAt(index).toString('utf8');
  }

  /** The event type (as sent) of the event at `index`. */
  typeAt(index: number): string {
    return this.types[this.typeOf[index]!]!;
  }

  /** The trial id of the event at `index`. */
  trialAt(index: number): string {
    return this.trials[this.trialOf[index]!]!;
  }

  /** Compiles a filter; unknown types and trials simply match nothing. */
  compileFilter(eventTypes: string[], trialIds: string[]): StreamFilter {
    const typeMask = new Uint8Array(Math.max(1, this.types.length));
    const trialMask = new Uint8Array(Math.max(1, this.trials.length));
    for (const t of eventTypes) {
      const i = this.typeIndex.get(t);
      if (i !== undefined) typeMask[i] = 1;
    }
    for (const t of trialIds) {
      const i = this.trialIndex.get(t);
      if (i !== undefined) trialMask[i] = 1;
    }
    return { eventTypes, trialIds, typeMask, trialMask };
  }

  /** True when the event at `index` matches `filter`. */
  matches(filter: StreamFilter, index: number): boolean {
    return filter.typeMask[this.typeOf[index]!] === 1 && filter.trialMask[this.trialOf[index]!] === 1;
  }

  /**
   * Scans one page (docs/upstream.md "Reading the stream" rules 1–4): up to `limit` matching events after stream
   * position `after`, among the first `visible` events.
   *
   * `nextAfter` is the position of the last returned event when the page is full, else
   * `visible` (everything seen so far was scanned), so that polling continues after it.
   */
  scan(filter: StreamFilter, after: number, limit: number, visible: number): PageScan {
    const indexes: number[] = [];
    const typeOf = this.typeOf;
    const trialOf = this.trialOf;
    const tm = filter.typeMask;
    const rm = filter.trialMask;
    let i = after;
    for (; i < visible && indexes.length < limit; i++) {
      if (tm[typeOf[i]!] === 1 && rm[trialOf[i]!] === 1) indexes.push(i);
    }
    if (indexes.length < limit) return { indexes, nextAfter: Math.max(after, visible), hasNextPage: false };
    const nextAfter = indexes[indexes.length - 1]! + 1;
    let hasNextPage = false;
    for (let j = nextAfter; j < visible; j++) {
      if (tm[typeOf[j]!] === 1 && rm[trialOf[j]!] === 1) {
        hasNextPage = true;
        break;
      }
    }
    return { indexes, nextAfter, hasNextPage };
  }

  /** The last index `< before` that matches `filter`, or -1. */
  lastMatchBefore(filter: StreamFilter, before: number): number {
    for (let i = before - 1; i >= 0; i--) if (this.matches(filter, i)) return i;
    return -1;
  }

  /** Total bytes of rendered JSON held. */
  get bytes(): number {
    this.flush();
    let n = this.used;
    for (const c of this.chunks) n += c.length;
    return n;
  }
}
