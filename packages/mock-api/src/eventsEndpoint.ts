/**
 * The reporting events stream `GET /rpi/events`: bearer-token check,
 * query and cursor parsing, keyset pages over the event store, and the auth- and
 * content-phase faults of events pages (faults.ts), the hostile encodings included.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeCursor, encodeCursor } from './cursor.js';
import { eventIndexOfId } from './eventIds.js';
import type { EventStore, StreamFilter } from './eventStore.js';
import type { FaultRule } from './faults.js';
import { reorderedJson, splitAtMessageEnd, withDuplicateIdKey, withEscapedKeys, withLoneSurrogateNote } from './hostileJson.js';
import { errorBody, JSON_TYPE, send, type EndpointContext, type Prepared } from './http.js';
import type { TokenEndpoint } from './tokenEndpoint.js';

interface PageModel {
  filter: StreamFilter;
  after: number;
  limit: number;
  indexes: number[];
  nextPage: string;
  hasNextPage: boolean;
  requestUrl: string;
  filterKey: string;
}

/** `pagination` of an events page. */
interface Pagination {
  nextPage: string;
  hasNextPage: boolean;
}

/** How a page's events are framed (clean: all false). */
interface PageShape {
  /** `events` is an object `{"items":[…]}` (kind `eventsNotArray`). */
  eventsNotArray?: boolean;
  /** A second `"events":[]` after the real array (kind `duplicateEventsKey`). */
  duplicateEventsKey?: boolean;
  /** Top-level keys spelt `"\u0065vents"`, `"\u0070agination"` (kind `escapedKeys`). */
  escapedKeys?: boolean;
}

const COMMA = Buffer.from(',');
/** Requested URLs remembered for `nextPage` `cycle`. */
const HISTORY_MAX = 64;

/** The events endpoint over an event store. */
export class EventsEndpoint {
  /** Recent requested URLs with their filter (kind `nextPage` `cycle`). */
  private readonly history: Array<{ url: string; filterKey: string }> = [];
  /** Serial of `emptyPagesForever` URLs and of `longCycle` cycles. */
  private specialSerial = 0;
  /** Shared `x` bytes the `padEvents` pages slice their pads from. */
  private padBytes: Buffer = Buffer.alloc(0);

  /**
   * @param visible how many events (a prefix of the store) are served now
   * @param tokens the token endpoint whose tokens are accepted
   */
  constructor(
    private readonly ctx: EndpointContext,
    private readonly store: EventStore,
    private readonly visible: () => number,
    private readonly tokens: TokenEndpoint,
  ) {}

  /** Answers one `GET /rpi/events`. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const clean = async (): Promise<Prepared> => this.eventsResponse(req, path, false);
    if (await this.ctx.transport('events', res, path, clean)) return;
    send(res, await this.eventsResponse(req, path, true));
  }

  private unauthorized(description: string): Prepared {
    return errorBody(401, 'unauthorized', description, { 'www-authenticate': 'Bearer error="invalid_token"' });
  }

  private async eventsResponse(req: IncomingMessage, path: string, withFaults: boolean): Promise<Prepared> {
    if (!(await this.tokens.authorized(req))) return this.unauthorized('missing, unknown or expired bearer token');
    if (withFaults) {
      const rule = this.ctx.faults.take('events', 'auth', path);
      if (rule?.kind === 'revokeTokens') {
        this.tokens.revokeTokens();
        return this.unauthorized('token revoked');
      }
      if (rule?.kind === 'always401') return this.unauthorized('token rejected');
    }
    const url = new URL(req.url ?? '/', this.ctx.baseUrl);
    const special = this.specialPage(url);
    if (special !== undefined) return { status: 200, headers: { 'content-type': JSON_TYPE }, body: special };
    const parsed = this.parseQuery(url);
    if ('error' in parsed) return errorBody(400, 'invalid_request', parsed.error);
    const { filter, after, limit } = parsed;
    const visible = this.visible();
    const scan = this.store.scan(filter, after, limit, visible);
    const nextAfter = scan.nextAfter;
    const nextPage = this.cursorUrl(filter, nextAfter, limit);
    const filterKey = JSON.stringify([filter.eventTypes, filter.trialIds]);
    const page: PageModel = {
      filter,
      after,
      limit,
      indexes: scan.indexes,
      nextPage,
      hasNextPage: scan.hasNextPage,
      requestUrl: this.ctx.baseUrl + (req.url ?? ''),
      filterKey,
    };
    const rule = withFaults ? this.ctx.faults.take('events', 'content', path, (r) => this.canApply(r, page)) : undefined;
    const out = rule
      ? this.faultedPage(rule, page)
      : this.renderPage(
          page.indexes.map((i) => this.store.bytesAt(i)),
          { nextPage, hasNextPage: scan.hasNextPage },
        );
    if (withFaults) {
      if (!rule) this.ctx.stats.eventsServed += scan.indexes.length;
      this.history.push({ url: page.requestUrl, filterKey });
      if (this.history.length > HISTORY_MAX) this.history.shift();
    }
    return { status: 200, headers: { 'content-type': JSON_TYPE }, body: out };
  }

  /**
   * The pages of the fault URLs that outlive their rule: `?c=<n>` (`emptyPagesForever`)
   * and `?cursor=cycle.<id>.<step>.<length>` (`nextPage` `longCycle`); undefined for any
   * other URL. (`.` never occurs in a real cursor, which is base64url.)
   */
  private specialPage(url: URL): Buffer | undefined {
    const sp = url.searchParams;
    if (sp.has('c')) return this.emptyForeverPage();
    const m = /^cycle\.(\d{1,15})\.(\d{1,6})\.(\d{1,6})$/.exec(sp.get('cursor') ?? '');
    if (m === null) return undefined;
    const [id, step, length] = [Number(m[1]), Number(m[2]), Number(m[3])];
    return this.renderPage([], { nextPage: this.cycleUrl(id, (step + 1) % Math.max(1, length), length), hasNextPage: true });
  }

  private emptyForeverPage(): Buffer {
    this.specialSerial++;
    return this.renderPage([], { nextPage: `${this.ctx.baseUrl}/rpi/events?c=${this.specialSerial}`, hasNextPage: true });
  }

  private cycleUrl(id: number, step: number, length: number): string {
    return `${this.ctx.baseUrl}/rpi/events?cursor=cycle.${id}.${step}.${length}`;
  }

  private cursorUrl(filter: StreamFilter, after: number, limit: number): string {
    const cursor = encodeCursor({
      eventTypes: filter.eventTypes,
      trialIds: filter.trialIds,
      after,
      afterId: after > 0 ? this.store.idAt(after - 1) : null,
      limit,
    });
    return `${this.ctx.baseUrl}/rpi/events?cursor=${cursor}`;
  }

  private parseQuery(url: URL): { filter: StreamFilter; after: number; limit: number } | { error: string } {
    const sp = url.searchParams;
    const visible = this.visible();
    let limit: number | undefined;
    const limitText = sp.get('limit');
    if (limitText !== null) {
      if (!/^\d{1,9}$/.test(limitText) || Number(limitText) < 1) return { error: 'limit must be a positive integer' };
      limit = Math.min(Number(limitText), this.ctx.settings.maxLimit);
    }
    const types = sp.getAll('eventTypes');
    const trials = sp.getAll('trialIds');
    const cursorText = sp.get('cursor');
    if (cursorText !== null) {
      const c = decodeCursor(cursorText);
      if (c === undefined) return { error: 'invalid cursor' };
      if (sp.has('startingAfter')) return { error: 'startingAfter cannot be combined with a cursor' };
      if (
        (types.length > 0 && JSON.stringify(types) !== JSON.stringify(c.eventTypes)) ||
        (trials.length > 0 && JSON.stringify(trials) !== JSON.stringify(c.trialIds))
      )
        return { error: 'the cursor belongs to another filter' };
      let after = c.after;
      if (after > 0 && (after > this.store.count || this.store.idAt(after - 1) !== c.afterId)) {
        const idx = c.afterId === null ? undefined : eventIndexOfId(this.store.seed, c.afterId);
        if (idx === undefined) return { error: 'invalid cursor' };
        after = idx + 1;
      }
      if (after > visible) return { error: 'invalid cursor' };
      return {
        filter: this.store.compileFilter(c.eventTypes, c.trialIds),
        after,
        limit: limit ?? Math.min(c.limit, this.ctx.settings.maxLimit),
      };
    }
    if (types.length === 0 || types.some((t) => t.length === 0))
      return { error: 'eventTypes is required (one query parameter per event type)' };
    if (trials.length === 0 || trials.some((t) => t.length === 0))
      return { error: 'trialIds is required (one query parameter per trial id)' };
    let after = 0;
    const startingAfter = sp.get('startingAfter');
    if (startingAfter !== null) {
      const idx = eventIndexOfId(this.store.seed, startingAfter);
      if (idx === undefined || idx >= visible) return { error: 'startingAfter is not a known event id' };
      after = idx + 1;
    }
    return { filter: this.store.compileFilter(types, trials), after, limit: limit ?? this.ctx.settings.defaultLimit };
  }

  private renderPage(items: Buffer[], pagination: Pagination | undefined, shape: PageShape = {}): Buffer {
    const eventsKey = shape.escapedKeys === true ? '"\\u0065vents"' : '"events"';
    const paginationKey = shape.escapedKeys === true ? '"\\u0070agination"' : '"pagination"';
    const parts: Buffer[] = [Buffer.from(`{${eventsKey}:${shape.eventsNotArray === true ? '{"items":[' : '['}`)];
    items.forEach((b, i) => {
      if (i > 0) parts.push(COMMA);
      parts.push(b);
    });
    parts.push(Buffer.from(shape.eventsNotArray === true ? ']}' : ']'));
    if (shape.duplicateEventsKey === true) parts.push(Buffer.from(',"events":[]'));
    if (pagination !== undefined) parts.push(Buffer.from(`,${paginationKey}:${JSON.stringify(pagination)}`));
    parts.push(Buffer.from('}'));
    return Buffer.concat(parts);
  }

  /**
   * Kind `padEvents`: the page with a last member `"pad":"xx…"` in every event's message,
   * `bytes` bytes in all when the clean page is smaller. Returned as pieces whose pads are
   * slices of one shared buffer.
   */
  private paddedPage(page: PageModel, pagination: Pagination, bytes: number): Buffer[] {
    const splits = page.indexes.map((i) => splitAtMessageEnd(this.store.jsonAt(i), 'pad'));
    const heads = splits.map((s) => Buffer.from(`${s.head}${s.empty ? '' : ','}"pad":"`));
    const tails = splits.map((s) => Buffer.from(`"${s.tail}`));
    const prefix = Buffer.from('{"events":[');
    const suffix = Buffer.from(`],"pagination":${JSON.stringify(pagination)}}`);
    const n = splits.length;
    let unpadded = prefix.length + suffix.length + Math.max(0, n - 1);
    for (let i = 0; i < n; i++) unpadded += heads[i]!.length + tails[i]!.length;
    const extra = Math.max(0, bytes - unpadded);
    const each = Math.floor(extra / n);
    const rest = extra % n;
    const longest = each + (rest > 0 ? 1 : 0);
    if (this.padBytes.length < longest) this.padBytes = Buffer.alloc(longest, 'x');
    const out: Buffer[] = [prefix];
    for (let i = 0; i < n; i++) {
      if (i > 0) out.push(COMMA);
      out.push(heads[i]!, this.padBytes.subarray(0, each + (i < rest ? 1 : 0)), tails[i]!);
    }
    out.push(suffix);
    return out;
  }

  private canApply(rule: FaultRule, page: PageModel): boolean {
    switch (rule.kind) {
      case 'eventWithoutId':
      case 'duplicateIdWithinPage':
      case 'duplicateEventsKey':
      case 'escapedKeys':
      case 'padEvents':
        return page.indexes.length > 0;
      case 'loneSurrogate':
      case 'duplicateIdKey':
        return page.indexes.length >= (rule.event ?? 1);
      case 'duplicateIdAcrossPages':
      case 'reorderedRedelivery':
        return this.store.lastMatchBefore(page.filter, page.after) >= 0;
      case 'sameIdOtherPayload':
        return page.indexes.length > 0 || this.store.lastMatchBefore(page.filter, page.after) >= 0;
      default:
        return true;
    }
  }

  private changedPayload(index: number): Buffer {
    const env = JSON.parse(this.store.jsonAt(index)) as Record<string, unknown>;
    const msg = { ...((env['message'] ?? {}) as Record<string, unknown>) };
    if (typeof msg['patientStatus'] === 'string') msg['patientStatus'] = msg['patientStatus'] === 'archive' ? 'preScreening' : 'archive';
    if (Array.isArray(msg['contactAttemptOutcomes'])) msg['contactAttemptOutcomes'] = ['reached'];
    msg['revision'] = 2;
    env['message'] = msg;
    return Buffer.from(JSON.stringify(env));
  }

  /** The page `rule` (a page fault of docs/ingest.md's catalogue, faults.ts) makes of `page`. */
  private faultedPage(rule: FaultRule, page: PageModel): Buffer | Buffer[] {
    const items = page.indexes.map((i) => this.store.bytesAt(i));
    const pagination: Pagination = { nextPage: page.nextPage, hasNextPage: page.hasNextPage };
    switch (rule.kind) {
      case 'missingPagination':
        return this.renderPage(items, undefined);
      case 'eventsNotArray':
        return this.renderPage(items, pagination, { eventsNotArray: true });
      case 'duplicateEventsKey':
        return this.renderPage(items, pagination, { duplicateEventsKey: true });
      case 'escapedKeys':
        return this.renderPage(
          page.indexes.map((i) => Buffer.from(withEscapedKeys(this.store.jsonAt(i)))),
          pagination,
          { escapedKeys: true },
        );
      case 'emptyPagesForever':
        return this.emptyForeverPage();
      case 'padEvents':
        return this.paddedPage(page, pagination, rule.bytes!);
      case 'nextPage':
        return this.renderPage(items, this.faultedPagination(rule, page, pagination));
      default:
        return this.renderPage(this.faultedItems(rule, page, items), pagination);
    }
  }

  /** The page's events (`items`, edited in place) as a fault on one or more events has them; others leave them as they are. */
  private faultedItems(rule: FaultRule, page: PageModel, items: Buffer[]): Buffer[] {
    switch (rule.kind) {
      case 'loneSurrogate':
      case 'duplicateIdKey': {
        const k = (rule.event ?? 1) - 1;
        const json = this.store.jsonAt(page.indexes[k]!);
        items[k] = Buffer.from(rule.kind === 'loneSurrogate' ? withLoneSurrogateNote(json) : withDuplicateIdKey(json));
        return items;
      }
      case 'reorderedRedelivery': {
        const prev = this.store.lastMatchBefore(page.filter, page.after);
        items.unshift(Buffer.from(reorderedJson(JSON.parse(this.store.jsonAt(prev)))));
        return items;
      }
      case 'eventWithoutId': {
        const k = Math.floor(items.length / 2);
        const env = JSON.parse(this.store.jsonAt(page.indexes[k]!)) as Record<string, unknown>;
        delete env['id'];
        items[k] = Buffer.from(JSON.stringify(env));
        return items;
      }
      case 'duplicateIdWithinPage': {
        const k = Math.floor(items.length / 2);
        items.splice(k + 1, 0, items[k]!);
        return items;
      }
      case 'duplicateIdAcrossPages':
        items.unshift(this.store.bytesAt(this.store.lastMatchBefore(page.filter, page.after)));
        return items;
      case 'sameIdOtherPayload': {
        const prev = this.store.lastMatchBefore(page.filter, page.after);
        if (prev >= 0) items.unshift(this.changedPayload(prev));
        else items.push(this.changedPayload(page.indexes[0]!));
        return items;
      }
      default:
        return items;
    }
  }

  /** The pagination of a `nextPage` fault: `page.nextPage` bent as `rule.variant` says. */
  private faultedPagination(rule: FaultRule, page: PageModel, pagination: Pagination): Pagination {
    const u = new URL(page.nextPage);
    switch (rule.variant) {
      case 'otherOrigin': {
        const target = new URL(rule.url ?? 'http://127.0.0.1:9');
        return { ...pagination, nextPage: `${target.origin}${u.pathname}${u.search}` };
      }
      case 'otherScheme':
        return { ...pagination, nextPage: `https://${u.host}${u.pathname}${u.search}` };
      case 'otherPort': {
        const port = rule.port ?? (Number(u.port) === 65535 ? 1024 : Number(u.port) + 1);
        return { ...pagination, nextPage: `${u.protocol}//${u.hostname}:${port}${u.pathname}${u.search}` };
      }
      case 'userInfo':
        return { ...pagination, nextPage: `${u.protocol}//user:pass@${u.host}${u.pathname}${u.search}` };
      case 'relative':
        return { ...pagination, nextPage: `${u.pathname}${u.search}` };
      case 'unchanged':
        return { nextPage: page.requestUrl, hasNextPage: true };
      case 'cycle':
        return { nextPage: this.earlierUrl(page) ?? this.cursorUrl(page.filter, 0, page.limit), hasNextPage: true };
      case 'oversizedUrl':
        return { ...pagination, nextPage: `${page.nextPage}&pad=${'x'.repeat(rule.size ?? 100_000)}` };
      case 'longCycle':
        this.specialSerial++;
        return { nextPage: this.cycleUrl(this.specialSerial, 0, rule.length ?? 3), hasNextPage: true };
      default:
        return pagination;
    }
  }

  /** The latest URL requested before with the same filter as `page`, other than `page`'s own. */
  private earlierUrl(page: PageModel): string | undefined {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const h = this.history[i]!;
      if (h.filterKey === page.filterKey && h.url !== page.requestUrl) return h.url;
    }
    return undefined;
  }
}
