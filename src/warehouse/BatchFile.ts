/**
 * A batch of events as a file of rows that DuckDB's CSV reader loads into `raw.events` in one
 * statement, on DuckDB's own threads (`docs/ingest.md` "How a batch is written"). Pages are
 * written to it as they arrive, so a batch costs disk, not memory: the extract holds one
 * page at a time, and the file's row offsets (4 bytes a row).
 *
 * The format is this module's alone; {@link batchFileReader} and {@link decodedField}
 * are the SQL side of it. One row per event, ended by `\n`, six fields separated by 0x1F:
 *
 *   position (1-based within the batch) · id · type · publishedTime · message · envelope
 *
 * - `id`, `type` and a string `publishedTime` are the token's characters as sent when it holds
 *   no escape (valid JSON then holds no control character, so no separator or quote can occur
 *   in it); else 0x02 and the hex of the unescaped value's UTF-8 ({@link decodedField}).
 * - `message`, `envelope` and a `publishedTime` that is not a string are the bytes as sent;
 *   quoted with 0x01 when the page holds a line break (JSON text never holds a byte 0x01).
 * - Absent or JSON null is an empty field (NULL); an empty string is an empty quoted field.
 *
 * A file that holds a row over {@link WIDE_ROW_BYTES} is cut into parts of about
 * {@link PART_BYTES} (at row boundaries; positions run on), each loaded by a statement of its
 * own: DuckDB holds a statement's wide rows in memory several times over while it reads them.
 *
 * @module
 */
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { WarehouseError } from '../errors.js';
import { EVENT_SLOTS, hasEscapeByte, PART, type PageEvents } from '../events/PageEvents.js';
import { sqlString } from './Warehouse.js';

const SEPARATOR = 0x1f;
const QUOTE = 0x01;
const HEX_MARK = 0x02;
const NEWLINE = 0x0a;
const JSON_QUOTE = 0x22;

/** Bytes collected before one write to the file (1 MiB). */
const SCRATCH_BYTES = 1 << 20;
/** A raw part longer than this (64 KiB) is written straight from the page, not copied. */
const DIRECT_BYTES = 1 << 16;
/** The largest batch file the row offsets can address (2 GiB). */
const MAX_FILE_BYTES = 2 ** 31 - 1;

/**
 * A row longer than this (8 KiB) is wide: it holds a text that DuckDB stores out of line, and
 * DuckDB needs memory in proportion to the wide rows of a statement and of a transaction.
 */
export const WIDE_ROW_BYTES = 8 * 1024;

/** Size of a part of a file that holds a wide row (4 MiB; see {@link BatchFile}). */
export const PART_BYTES = 4 * 1024 * 1024;

/**
 * `read_csv(…)` of a batch file, every option explicit (nothing sniffed), one thread (a line
 * may be longer than DuckDB's parallel reader handles).
 *
 * @param paths the file, or its parts in order
 * @param longestRow its longest row, bytes: DuckDB's reader needs a line and its buffer larger
 * @param json `message` and `envelope` as JSON: DuckDB's JSON reader judges each one as it
 *   reads it (the load fails on one it refuses); else as text
 */
export function batchFileReader(paths: readonly string[], longestRow: number, json: boolean): string {
  const maxLine = Math.max(2 * 1024 * 1024, longestRow + 1024);
  const buffer = Math.max(1024 * 1024, maxLine + 1024);
  const text = json ? 'JSON' : 'VARCHAR';
  const columns = `{'pos': 'BIGINT', 'id': 'VARCHAR', 'type': 'VARCHAR', 'published': 'VARCHAR', 'message': '${text}', 'envelope': '${text}'}`;
  const files = paths.length === 1 ? sqlString(paths[0]!) : `[${paths.map(sqlString).join(', ')}]`;
  return `read_csv(${files}, columns = ${columns}, header = false, auto_detect = false,
    delim = '\x1f', quote = '\x01', escape = '\x01', new_line = '\\n', allow_quoted_nulls = false,
    compression = 'none', parallel = false, max_line_size = ${maxLine}, buffer_size = ${buffer})`;
}

/** SQL of a text field that may be hex-marked ({@link BatchFile} format), decoded. */
export function decodedField(column: string): string {
  return `case when starts_with(${column}, chr(2)) then decode(unhex(substr(${column}, 2))) else ${column} end`;
}

/** One row of a batch file, read back as texts. */
export interface BatchRow {
  id: string;
  type: string | null;
  publishedTime: string | null;
  message: string | null;
  envelope: string;
}

/** A row to write instead of the one sent (a quarantined event): its parts as texts. */
export interface ReplacementRow {
  envelope: string;
  message: string | null;
  type: string | null;
}

/** Decimal digits of a non-negative integer into `out` at `o`; returns the end. */
function putDigits(out: Buffer, o: number, n: number): number {
  if (n < 10) {
    out[o] = 48 + n;
    return o + 1;
  }
  let digits = 0;
  for (let m = n; m > 0; m = Math.floor(m / 10)) digits += 1;
  let k = o + digits;
  for (let m = n; m > 0; m = Math.floor(m / 10)) out[--k] = 48 + (m % 10);
  return o + digits;
}

/**
 * One batch file being written, then read by DuckDB, then removed. Not for concurrent use.
 */
export class BatchFile {
  /** Rows written. */
  rows = 0;
  /** Length of the longest row, bytes. */
  longestRow = 0;
  /** The files of the batch: the first at the path given, then its parts `<path>.1`, `<path>.2`, … */
  readonly paths: string[] = [];
  private readonly fds: number[] = [];
  /** Where each part starts, in bytes of the whole batch. */
  private readonly partStarts: number[] = [];
  /** Bytes handed to the files so far (the scratch not included). */
  private written = 0;
  private scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  private used = 0;
  /** Byte offset (in the whole batch) of each row's start, and of the end after the last row. */
  private starts = new Int32Array(1024);

  private constructor(readonly path: string) {
    this.openPart();
  }

  /** A new, empty file at `path` (mode 0600; it must not exist). */
  static create(path: string): BatchFile {
    return new BatchFile(path);
  }

  /** Size of the batch so far, bytes. */
  get bytes(): number {
    return this.written + this.used;
  }

  private openPart(): void {
    const path = this.paths.length === 0 ? this.path : `${this.path}.${this.paths.length}`;
    try {
      this.fds.push(openSync(path, 'wx+', 0o600));
    } catch (err) {
      throw diskError(err, path);
    }
    this.paths.push(path);
    this.partStarts.push(this.bytes);
  }

  /** Write `b[a, a + n)` whole to the current part (a short write is written on). */
  private writeAll(b: Buffer, a: number, n: number): void {
    try {
      for (let done = 0; done < n;) done += writeSync(this.fd, b, a + done, n - done);
    } catch (err) {
      throw diskError(err, this.paths[this.paths.length - 1]!);
    }
    this.written += n;
  }

  private get fd(): number {
    return this.fds[this.fds.length - 1]!;
  }

  /** Append one row per event of `events`, in order; positions continue the file's. */
  appendPage(events: PageEvents): void {
    const b = events.bytes;
    const at = events.offsets;
    const quote = events.hasLineBreak;
    for (let i = 0; i < events.count; i += 1) {
      const o = i * EVENT_SLOTS;
      this.beginRow();
      this.token(b, at[o + PART.id]!, at[o + PART.id + 1]!);
      this.separator();
      const ta = at[o + PART.type]!;
      if (ta >= 0) this.token(b, ta, at[o + PART.type + 1]!);
      this.separator();
      const pa = at[o + PART.publishedTime]!;
      if (pa >= 0) {
        const pb = at[o + PART.publishedTime + 1]!;
        if (b[pa] === JSON_QUOTE) this.token(b, pa, pb);
        else this.raw(b, pa, pb, quote);
      }
      this.separator();
      const ma = at[o + PART.message]!;
      if (ma >= 0) this.raw(b, ma, at[o + PART.message + 1]!, quote);
      this.separator();
      this.raw(b, at[o + PART.envelope]!, at[o + PART.envelope + 1]!, quote);
      this.endRow();
    }
  }

  /**
   * Append the rows of `source` from row 0 up to `limit` (exclusive), renumbered: a row that
   * `plan` maps to `'skip'` is left out, one it maps to a {@link ReplacementRow} is written in
   * that form (its id and publishedTime as sent). Returns the source row of each row written.
   */
  appendFrom(source: BatchFile, limit: number, plan: (row: number) => 'keep' | 'skip' | ReplacementRow): Int32Array {
    source.flush();
    const rowsOf = new Int32Array(limit);
    let n = 0;
    for (let k = 0; k < limit; k += 1) {
      const what = plan(k);
      if (what === 'skip') continue;
      const bytes = source.rowBytes(k);
      // The fields after the position: as sent, or rebuilt.
      const rest = bytes.indexOf(SEPARATOR);
      this.beginRow();
      if (what === 'keep') {
        this.copy(bytes, rest + 1, bytes.length - 1);
      } else {
        const fields = splitFields(bytes);
        this.copy(bytes, fields[1]![0], fields[1]![1]);
        this.separator();
        if (what.type !== null) this.text(what.type);
        this.separator();
        this.copy(bytes, fields[3]![0], fields[3]![1]);
        this.separator();
        if (what.message !== null) this.text(what.message);
        this.separator();
        this.text(what.envelope);
      }
      this.endRow();
      rowsOf[n++] = k;
    }
    return rowsOf.slice(0, n);
  }

  /** Row `k` read back as texts (a hex-marked field decoded, quotes removed). */
  readRow(k: number): BatchRow {
    this.flush();
    const bytes = this.rowBytes(k);
    const f = splitFields(bytes);
    const field = (n: number): string | null => {
      const [a, e] = f[n]!;
      if (a === e) return null;
      if (bytes[a] === QUOTE) return bytes.toString('utf8', a + 1, e - 1);
      if (bytes[a] === HEX_MARK) return Buffer.from(bytes.toString('latin1', a + 1, e), 'hex').toString('utf8');
      return bytes.toString('utf8', a, e);
    };
    return { id: field(1)!, type: field(2), publishedTime: field(3), message: field(4), envelope: field(5)! };
  }

  /** Write out what is collected; the files are then complete for a reader. */
  flush(): void {
    if (this.used === 0) return;
    this.writeAll(this.scratch, 0, this.used);
    this.used = 0;
  }

  /** Close and delete the files. Idempotent; never throws (a file left behind goes with the batch folder). */
  remove(): void {
    for (const fd of this.fds.splice(0)) {
      try {
        closeSync(fd);
      } catch {
        // already closed, or the disk failed: the descriptor is gone either way
      }
    }
    for (const path of this.paths) rmSync(path, { force: true });
  }

  /** The bytes of row `k`, its newline included. */
  private rowBytes(k: number): Buffer {
    const a = this.starts[k]!;
    const e = this.starts[k + 1]!;
    let part = this.partStarts.length - 1;
    while (this.partStarts[part]! > a) part -= 1;
    const out = Buffer.allocUnsafe(e - a);
    readSync(this.fds[part]!, out, 0, e - a, a - this.partStarts[part]!);
    return out;
  }

  private beginRow(): void {
    if (this.longestRow > WIDE_ROW_BYTES && this.bytes - this.partStarts[this.partStarts.length - 1]! >= PART_BYTES) {
      this.flush();
      this.openPart();
    }
    if (this.starts.length < this.rows + 2) {
      const grown = new Int32Array(this.starts.length * 2);
      grown.set(this.starts);
      this.starts = grown;
    }
    this.starts[this.rows] = this.bytes;
    this.rows += 1;
    this.room(24);
    this.used = putDigits(this.scratch, this.used, this.rows);
    this.scratch[this.used++] = SEPARATOR;
  }

  private endRow(): void {
    this.room(1);
    this.scratch[this.used++] = NEWLINE;
    const end = this.bytes;
    if (end > MAX_FILE_BYTES) throw new Error(`a batch file passed ${MAX_FILE_BYTES} bytes (bug: batches end far earlier)`);
    this.starts[this.rows] = end;
    const length = end - this.starts[this.rows - 1]!;
    if (length > this.longestRow) this.longestRow = length;
  }

  private separator(): void {
    this.room(1);
    this.scratch[this.used++] = SEPARATOR;
  }

  /** A string token `b[a, e)` (quotes included): its characters, or hex-marked when it holds an escape. */
  private token(b: Buffer, a: number, e: number): void {
    if (e - a === 2) this.emptyText();
    else if (hasEscapeByte(b, a + 1, e - 1)) this.hexText(Buffer.from(JSON.parse(b.toString('utf8', a, e)) as string, 'utf8'));
    else this.copy(b, a + 1, e - 1);
  }

  /** A JS text (a replacement row's part): as is, or hex-marked when it holds a control character. */
  private text(value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    if (bytes.length === 0) this.emptyText();
    else if (/[\u0000-\u001f]/.test(value)) this.hexText(bytes);
    else this.copy(bytes, 0, bytes.length);
  }

  /** An empty string: an empty quoted field (an empty field is NULL). */
  private emptyText(): void {
    this.room(2);
    this.scratch[this.used++] = QUOTE;
    this.scratch[this.used++] = QUOTE;
  }

  /** A text's UTF-8 bytes as 0x02 and their hex. */
  private hexText(bytes: Buffer): void {
    const hex = bytes.toString('hex');
    this.room(hex.length + 1);
    this.scratch[this.used++] = HEX_MARK;
    this.used += this.scratch.write(hex, this.used, 'latin1');
  }

  /** JSON text as sent `b[a, e)`, quoted when the page holds a line break. */
  private raw(b: Buffer, a: number, e: number, quote: boolean): void {
    if (quote) {
      this.room(1);
      this.scratch[this.used++] = QUOTE;
    }
    this.copy(b, a, e);
    if (quote) {
      this.room(1);
      this.scratch[this.used++] = QUOTE;
    }
  }

  private copy(b: Buffer, a: number, e: number): void {
    const n = e - a;
    if (n > DIRECT_BYTES) {
      this.flush();
      this.writeAll(b, a, n);
      return;
    }
    this.room(n);
    if (n <= 64) {
      const s = this.scratch;
      let o = this.used;
      for (let k = a; k < e; k += 1) s[o++] = b[k]!;
      this.used = o;
    } else {
      this.used += b.copy(this.scratch, this.used, a, e);
    }
  }

  /** Make room for `n` bytes in the scratch buffer. */
  private room(n: number): void {
    if (this.used + n <= this.scratch.length) return;
    this.flush();
    if (n > this.scratch.length) this.scratch = Buffer.allocUnsafe(n);
  }
}

/** Start and end of each of the six fields of a row (its newline excluded). */
function splitFields(row: Buffer): [number, number][] {
  const out: [number, number][] = [];
  let a = 0;
  for (let n = 0; n < 5; n += 1) {
    const e = row.indexOf(SEPARATOR, a);
    out.push([a, e]);
    a = e + 1;
  }
  out.push([a, row.length - 1]);
  return out;
}

/** A file error of a batch file as a warehouse failure (exit 7), naming the file, never its contents. */
function diskError(err: unknown, path: string): WarehouseError {
  const code = (err as NodeJS.ErrnoException).code ?? String(err);
  return new WarehouseError(`cannot write the batch file ${path}: ${code}`, {
    cause: err,
    hint: 'free disk space beside the database; nothing of this batch was committed',
  });
}
