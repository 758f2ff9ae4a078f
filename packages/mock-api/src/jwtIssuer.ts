/**
 * The simulator's check of bearer tokens signed by another token server (`trustedIssuer`):
 * a JWT access token (RFC 9068 / RFC 7519) is accepted when its signature verifies with a key
 * of the issuer's JWKS (fetched once at start), its `iss` is the configured issuer, its `aud`
 * holds the simulator's audience and it has not expired. This lets tests run the job against
 * real OAuth 2.0 servers (oidc-provider, oauth2-mock-server) while the events still come from
 * the simulator (docs/upstream.md "Token requests"). Without `trustedIssuer` nothing here runs.
 *
 * @module
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { ConfigError } from './errors.js';

/** The token server whose JWTs the simulator accepts. */
export interface TrustedIssuer {
  /** Exact `iss` of its tokens. */
  issuer: string;
  /** Its JWKS URL (`jwks_uri` of its discovery document). */
  jwksUri: string;
}

/** Largest JWKS document read, in bytes. */
const MAX_JWKS_BYTES = 1024 * 1024;
/** Longest wait for the JWKS, in ms. */
const JWKS_TIMEOUT_MS = 5000;
/** Longest token looked at, in characters. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** Tolerance for `nbf` in the future, in seconds (as before: 5 s). */
const CLOCK_TOLERANCE_S = 5;

/** Reads at most {@link MAX_JWKS_BYTES} of `url` within {@link JWKS_TIMEOUT_MS}. */
async function fetchBounded(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS), redirect: 'error' });
  if (res.status !== 200 || res.body === null) throw new Error(`mock-api: JWKS at ${url} answered HTTP ${res.status}`);
  const chunks: Uint8Array[] = [];
  let n = 0;
  for await (const chunk of res.body) {
    n += chunk.byteLength;
    if (n > MAX_JWKS_BYTES) throw new Error(`mock-api: JWKS at ${url} is larger than ${MAX_JWKS_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Verifies the JWTs of one {@link TrustedIssuer} with `jose` (signature, `iss`, `aud`, `exp`, `nbf`). */
export class JwtVerifier {
  private constructor(
    private readonly trusted: TrustedIssuer,
    private readonly audience: string,
    private readonly keys: JWTVerifyGetKey,
    private readonly now: () => number,
  ) {}

  /**
   * Fetches the issuer's JWKS once and keeps it as a local key set.
   *
   * @param audience the `aud` a token must hold
   * @param now clock, epoch ms
   * @throws {ConfigError} (exit 2) when the JWKS cannot be read or holds no key
   */
  static async load(trusted: TrustedIssuer, audience: string, now: () => number): Promise<JwtVerifier> {
    let doc: unknown;
    try {
      doc = JSON.parse(await fetchBounded(trusted.jwksUri));
    } catch (err) {
      throw new ConfigError(`mock-api --trusted-jwks-uri: cannot read the JWKS at ${trusted.jwksUri}: ${(err as Error).message}`);
    }
    const keys = (doc as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys) || keys.length === 0)
      throw new ConfigError(`mock-api --trusted-jwks-uri: no usable signing key in the JWKS at ${trusted.jwksUri}`);
    let set: JWTVerifyGetKey;
    try {
      set = createLocalJWKSet(doc as JSONWebKeySet);
    } catch (err) {
      throw new ConfigError(
        `mock-api --trusted-jwks-uri: no usable signing key in the JWKS at ${trusted.jwksUri}: ${(err as Error).message}`,
      );
    }
    return new JwtVerifier(trusted, audience, set, now);
  }

  /** True when `token` is a JWT of the trusted issuer, signed by one of its keys, for the audience, not expired. */
  async verify(token: string): Promise<boolean> {
    if (token.length > MAX_TOKEN_LENGTH) return false;
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.trusted.issuer,
        audience: this.audience,
        requiredClaims: ['exp'],
        currentDate: new Date(this.now()),
        clockTolerance: CLOCK_TOLERANCE_S,
      });
      // jose applies the tolerance to `exp` too; expiry stays exact, as before.
      return typeof payload.exp === 'number' && this.now() / 1000 < payload.exp;
    } catch {
      return false;
    }
  }
}
