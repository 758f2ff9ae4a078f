/**
 * The study-website site list (docs/upstream.md "Site list"): a public endpoint authorised by the
 * request `Origin`. It never receives an `Authorization` header (docs/contracts.md guarantee 5).
 *
 * @module
 */
import { z } from 'zod';
import { AuthError, ConfigError, UpstreamContractError } from '../errors.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { parseBaseUrl, joinBasePath } from './events.js';
import { redactUrl, type HttpClient, type HttpResponse } from './http.js';
import { parseJsonBody } from './json.js';

/**
 * One site as sent (docs/upstream.md "Site list"), unknown keys kept. Only `siteId` is required; the other
 * spec fields are checked for type when present and may be null (the warehouse keeps NULL).
 * `siteId` belongs to the study-website namespace: never equal to an event `siteId` (docs/upstream.md "Services and identifiers").
 */
export interface SiteRecord {
  siteId: string;
  displayName?: string | null;
  siteName?: string | null;
  sponsorSiteId?: string | null;
  street?: string | null;
  address1?: string | null;
  address2?: string | null;
  city?: string | null;
  state?: string | null;
  postalCode?: string | null;
  country?: string | null;
  phoneNumber?: string | null;
  /** Decimal degrees. */
  latitude?: number | null;
  /** Decimal degrees. */
  longitude?: number | null;
  [k: string]: unknown;
}

const optText = z.string().nullable().optional();
const optNumber = z.number().finite().nullable().optional();
const SiteShape = z.looseObject({
  siteId: z.string().min(1),
  displayName: optText,
  siteName: optText,
  sponsorSiteId: optText,
  street: optText,
  address1: optText,
  address2: optText,
  city: optText,
  state: optText,
  postalCode: optText,
  country: optText,
  phoneNumber: optText,
  latitude: optNumber,
  longitude: optNumber,
});

/** `String.prototype.isWellFormed` (ES2024, in Node 20; not in this project's TS lib). */
const isWellFormed = (String.prototype as unknown as { isWellFormed(this: string): boolean }).isWellFormed;

/**
 * True when every string in `value` (object keys included, at any depth) is well-formed
 * Unicode: no lone surrogate such as the JSON escape `"\ud800"`, which `JSON.parse` accepts
 * but DuckDB's JSON type refuses. Iterative: a deeply nested record cannot overflow the stack.
 */
export function isWellFormedDeep(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (!isWellFormed.call(v)) return false;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        if (!isWellFormed.call(k)) return false;
        stack.push(item);
      }
    }
  }
  return true;
}

/**
 * Validates a parsed site-list response and returns the records as sent (not copied).
 *
 * @param where what the list is, for messages, e.g. `site list of microsite m / trial t`
 *   (configured ids only, never a value from the body)
 * @throws {UpstreamContractError} when it is not an array, a record is not an object, has no
 *   non-empty string `siteId`, a spec field of the wrong type, or a string (key or value, at
 *   any depth) that is not well-formed Unicode (docs/security.md)
 */
export function validateSites(body: unknown, where = 'site list'): SiteRecord[] {
  if (!Array.isArray(body)) throw new UpstreamContractError(`${where}: the response is not a JSON array (docs/upstream.md "Site list")`);
  for (let i = 0; i < body.length; i++) {
    const r = SiteShape.safeParse(body[i]);
    if (!r.success) {
      const fields = [...new Set(r.error.issues.map((x) => (x.path.length ? x.path.join('.') : '(record)')))].join(', ');
      throw new UpstreamContractError(`${where}: record ${i + 1} breaks the contract (bad or missing: ${fields})`);
    }
    if (!isWellFormedDeep(body[i])) {
      throw new UpstreamContractError(
        `${where}: record ${i + 1} holds a string that is not well-formed Unicode (a lone surrogate escape); nothing of this site snapshot is stored`,
        { hint: 'the upstream must send valid Unicode text; report it to the site list owner' },
      );
    }
  }
  return body as SiteRecord[];
}

/**
 * One path segment for an id: `encodeURIComponent`, which keeps `/`, `?`, `#` and `%` inside
 * the segment.
 *
 * @throws {ConfigError} for an empty id and for the ids `.` and `..`: the URL standard
 *   resolves `.`/`..` segments in every spelling (`%2E%2E` included), and servers normalise
 *   them too, so no encoding keeps them a segment (docs/security.md "Site list paths")
 */
export function pathSegment(id: string, option: string): string {
  if (id === '' || id === '.' || id === '..') {
    throw new ConfigError(`${option} ${JSON.stringify(id)} cannot be sent as a URL path segment`, {
      hint: 'use the study-website id as issued: it is never empty, "." or ".."',
    });
  }
  return encodeURIComponent(id);
}

/** Reads the site list of a study website and trial (docs/upstream.md "Site list"). */
export class SitesClient {
  private readonly base: URL;
  private readonly origin: string;
  private readonly http: HttpClient;
  private readonly log: Logger;

  /**
   * @param opts.baseUrl the API's `{base_url}` (docs/upstream.md)
   * @param opts.origin the `Origin` header value the site list is authorised for (`--origin`)
   * @throws {ConfigError} for an invalid base URL or an empty origin
   */
  constructor(opts: { baseUrl: string; origin: string; http: HttpClient; logger?: Logger }) {
    this.base = parseBaseUrl(opts.baseUrl);
    if (opts.origin.trim() === '' || /[\r\n]/.test(opts.origin))
      throw new ConfigError('--origin must be a non-empty origin such as https://study.example.org');
    this.origin = opts.origin;
    this.http = opts.http;
    this.log = (opts.logger ?? silentLogger()).child({ component: 'upstream.sites' });
  }

  /**
   * GET `{base_url}/microsites-api/v1/:microsite_id/sites/:trial_id` (each id one
   * percent-encoded path segment, see {@link pathSegment}) with `Origin` set and never an
   * `Authorization` header.
   *
   * @returns the records as sent and the body text exactly as received
   * @throws {AuthError} (exit 3) on 401/403: the site list refused the origin
   * @throws {ConfigError} (exit 2) on 404: unknown microsite or trial id; an id that cannot be a path segment
   * @throws {UpstreamUnavailableError} (exit 4) when retries are spent (5xx, 429, network, unreadable body)
   * @throws {UpstreamContractError} (exit 6) on another 4xx, a 3xx, or a body that is not an array of
   *   site records (a string that is not well-formed Unicode included)
   */
  async fetchSites(micrositeId: string, trialId: string, signal?: AbortSignal): Promise<{ records: SiteRecord[]; bodyText: string }> {
    const path = `/microsites-api/v1/${pathSegment(micrositeId, 'microsite id')}/sites/${pathSegment(trialId, 'trial id')}`;
    const url = joinBasePath(this.base, path);
    // Belt and braces: the URL as parsed must end with exactly the path built above.
    if (!new URL(url).pathname.endsWith(path)) {
      throw new ConfigError(`microsite id / trial id would change the site list URL path`);
    }
    const list = `site list of microsite ${micrositeId} / trial ${trialId}`;
    const parse = (res: HttpResponse): SiteRecord[] => validateSites(parseJsonBody(res), list);
    const res = await this.http.getText(
      url,
      { origin: this.origin, accept: 'application/json' },
      { label: 'sites', parse, ...(signal ? { signal } : {}) },
    );
    const where = redactUrl(url);
    if (res.status === 401 || res.status === 403) {
      throw new AuthError(
        `the site list refused origin ${this.origin} for microsite ${micrositeId} / trial ${trialId} (HTTP ${res.status})`,
        {
          hint: 'check RECRUIT_ETL_ORIGIN, RECRUIT_ETL_MICROSITE_ID and the trial id: the combination must be permitted upstream',
        },
      );
    }
    if (res.status === 404) {
      throw new ConfigError(`the site list does not know microsite ${micrositeId} / trial ${trialId} (HTTP 404 at ${where})`, {
        hint: 'check RECRUIT_ETL_MICROSITE_ID and the trial id (study-website ids, not RPI ids: docs/upstream.md "Services and identifiers")',
      });
    }
    if (res.status >= 400) throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status}`);
    const records = res.parsed;
    if (records === undefined) throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status} without a site list`);
    this.log.info({ url: where, status: res.status, bytes: res.bytes, sites: records.length }, 'site list fetched');
    return { records, bodyText: res.bodyText };
  }
}
