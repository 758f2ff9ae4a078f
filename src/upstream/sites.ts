/**
 * The study-website site list (spec §2.3, §4.2, §5.6): a public endpoint authorised by the
 * request `Origin`. It never receives an `Authorization` header (DESIGN.md guarantee 5).
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
 * One site as sent (spec §2.3), unknown keys kept. Only `siteId` is required; the other
 * spec fields are checked for type when present and may be null (the warehouse keeps NULL).
 * `siteId` belongs to the study-website namespace: never equal to an event `siteId` (spec §1).
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

/**
 * Validates a parsed site-list response and returns the records as sent (not copied).
 *
 * @throws {UpstreamContractError} when it is not an array, a record is not an object, has no
 *   non-empty string `siteId`, or a spec field of the wrong type
 */
export function validateSites(body: unknown): SiteRecord[] {
  if (!Array.isArray(body)) throw new UpstreamContractError('site list response is not a JSON array (spec §4.2)');
  for (let i = 0; i < body.length; i++) {
    const r = SiteShape.safeParse(body[i]);
    if (!r.success) {
      const fields = [...new Set(r.error.issues.map((x) => (x.path.length ? x.path.join('.') : '(record)')))].join(', ');
      throw new UpstreamContractError(`site list record ${i + 1} breaks the contract (bad or missing: ${fields})`);
    }
  }
  return body as SiteRecord[];
}

function parseSites(res: HttpResponse): SiteRecord[] {
  return validateSites(parseJsonBody(res));
}

/** Reads the site list of a study website and trial (spec §4.2). */
export class SitesClient {
  private readonly base: URL;
  private readonly origin: string;
  private readonly http: HttpClient;
  private readonly log: Logger;

  /**
   * @param opts.baseUrl the spec's `{base_url}`
   * @param opts.origin the `Origin` header value the site list is authorised for (`--origin`)
   * @throws {ConfigError} for an invalid base URL or an empty origin
   */
  constructor(opts: { baseUrl: string; origin: string; http: HttpClient; logger?: Logger }) {
    this.base = parseBaseUrl(opts.baseUrl);
    if (opts.origin.trim() === '' || /[\r\n]/.test(opts.origin)) throw new ConfigError('--origin must be a non-empty origin such as https://study.example.org');
    this.origin = opts.origin;
    this.http = opts.http;
    this.log = (opts.logger ?? silentLogger()).child({ component: 'upstream.sites' });
  }

  /**
   * GET `{base_url}/microsites-api/v1/:microsite_id/sites/:trial_id` (path segments
   * percent-encoded) with `Origin` set and never an `Authorization` header.
   *
   * @returns the records as sent and the body text exactly as received
   * @throws {AuthError} (exit 3) on 401/403: the site list refused the origin
   * @throws {ConfigError} (exit 2) on 404: unknown microsite or trial id
   * @throws {UpstreamUnavailableError} (exit 4) when retries are spent (5xx, 429, network, unreadable body)
   * @throws {UpstreamContractError} (exit 6) on another 4xx, a 3xx, or a body that is not an array of site records
   */
  async fetchSites(micrositeId: string, trialId: string, signal?: AbortSignal): Promise<{ records: SiteRecord[]; bodyText: string }> {
    const url = joinBasePath(this.base, `/microsites-api/v1/${encodeURIComponent(micrositeId)}/sites/${encodeURIComponent(trialId)}`);
    const res = await this.http.getText(
      url,
      { origin: this.origin, accept: 'application/json' },
      { label: 'sites', parse: parseSites, ...(signal ? { signal } : {}) },
    );
    const where = redactUrl(url);
    if (res.status === 401 || res.status === 403) {
      throw new AuthError(`the site list refused origin ${this.origin} for microsite ${micrositeId} / trial ${trialId} (HTTP ${res.status})`, {
        hint: 'check RECRUIT_ETL_ORIGIN, RECRUIT_ETL_MICROSITE_ID and the trial id: the combination must be permitted upstream',
      });
    }
    if (res.status === 404) {
      throw new ConfigError(`the site list does not know microsite ${micrositeId} / trial ${trialId} (HTTP 404 at ${where})`, {
        hint: 'check RECRUIT_ETL_MICROSITE_ID and the trial id (study-website ids, not RPI ids: spec §1)',
      });
    }
    if (res.status >= 400) throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status}`);
    const records = res.parsed;
    if (records === undefined) throw new UpstreamContractError(`GET ${where} answered HTTP ${res.status} without a site list`);
    this.log.info({ url: where, status: res.status, bytes: res.bytes, sites: records.length }, 'site list fetched');
    return { records, bodyText: res.bodyText };
  }
}
