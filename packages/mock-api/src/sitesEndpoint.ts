/**
 * The study-website site list `GET /microsites-api/v1/:micrositeId/sites/:trialId`: no
 * token, an allowed `Origin` required; content fault `loneSurrogate`.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LONE_SURROGATE } from './hostileJson.js';
import { errorBody, jsonBody, send, type EndpointContext, type Prepared } from './http.js';
import type { SiteRecord } from './types.js';

/** The path of the site list; groups 1 and 2 are the (URL-encoded) microsite id and trial id. */
export const SITES_PATH = /^\/microsites-api\/v1\/([^/]+)\/sites\/([^/]+)\/?$/;

/** The site-list endpoint over the generated sites. */
export class SitesEndpoint {
  /**
   * @param sites the records served, per trial id
   */
  constructor(
    private readonly ctx: EndpointContext,
    private readonly sites: Readonly<Record<string, SiteRecord[]>>,
  ) {}

  /** Answers one `GET` of the site list (`msRaw`, `trialRaw`: the path segments as sent). */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, msRaw: string, trialRaw: string): Promise<void> {
    const clean = async (): Promise<Prepared> => this.response(req, msRaw, trialRaw);
    if (await this.ctx.transport('sites', res, path, clean)) return;
    const found = this.found(req, msRaw, trialRaw);
    if ('sites' in found) {
      const rule = this.ctx.faults.take('sites', 'content', path, () => found.sites.length > 0);
      if (rule?.kind === 'loneSurrogate') {
        // Well-formed JSON.stringify writes a lone surrogate as the escape text \ud800.
        return send(
          res,
          jsonBody(
            200,
            found.sites.map((s, i) => (i === 0 ? { ...s, displayName: LONE_SURROGATE } : s)),
            found.headers,
          ),
        );
      }
    }
    send(res, await clean());
  }

  private response(req: IncomingMessage, msRaw: string, trialRaw: string): Prepared {
    const found = this.found(req, msRaw, trialRaw);
    return 'sites' in found ? jsonBody(200, found.sites, found.headers) : found;
  }

  /** The site list a request may read, with its CORS headers, or the refusal. */
  private found(
    req: IncomingMessage,
    msRaw: string,
    trialRaw: string,
  ): { sites: SiteRecord[]; headers: Record<string, string> } | Prepared {
    if (req.headers.authorization !== undefined)
      return errorBody(400, 'invalid_request', 'the Authorization header must not be sent to the site list');
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || origin.length === 0) return errorBody(403, 'forbidden', 'an Origin header is required');
    if (!this.ctx.settings.allowedOrigins.includes(origin))
      return errorBody(403, 'forbidden', 'origin not permitted for this study website');
    let ms: string;
    let trial: string;
    try {
      ms = decodeURIComponent(msRaw);
      trial = decodeURIComponent(trialRaw);
    } catch {
      return errorBody(404, 'not_found', 'unknown study website or trial');
    }
    const sites = this.sites[trial];
    if (ms !== this.ctx.settings.micrositeId || sites === undefined) return errorBody(404, 'not_found', 'unknown study website or trial');
    return { sites, headers: { 'access-control-allow-origin': origin, vary: 'Origin' } };
  }
}
