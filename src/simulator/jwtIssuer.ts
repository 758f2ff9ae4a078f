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
import { constants, createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { ConfigError } from '../errors.js';

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

/** How each JWS `alg` (RFC 7518 §3, RFC 8037) is verified with node:crypto. */
const ALGORITHMS: Readonly<Record<string, { kty: string; hash: string | null; pss?: number; p1363?: true }>> = {
  RS256: { kty: 'RSA', hash: 'sha256' },
  RS384: { kty: 'RSA', hash: 'sha384' },
  RS512: { kty: 'RSA', hash: 'sha512' },
  PS256: { kty: 'RSA', hash: 'sha256', pss: 32 },
  PS384: { kty: 'RSA', hash: 'sha384', pss: 48 },
  PS512: { kty: 'RSA', hash: 'sha512', pss: 64 },
  ES256: { kty: 'EC', hash: 'sha256', p1363: true },
  ES384: { kty: 'EC', hash: 'sha384', p1363: true },
  ES512: { kty: 'EC', hash: 'sha512', p1363: true },
  EdDSA: { kty: 'OKP', hash: null },
  Ed25519: { kty: 'OKP', hash: null },
};

interface Jwk {
  kid?: string;
  kty: string;
  alg?: string;
  key: KeyObject;
}

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

/** Verifies the JWTs of one {@link TrustedIssuer}. */
export class JwtVerifier {
  private constructor(
    private readonly trusted: TrustedIssuer,
    private readonly audience: string,
    private readonly keys: readonly Jwk[],
    private readonly now: () => number,
  ) {}

  /**
   * Fetches the issuer's JWKS and keeps its public signing keys.
   *
   * @param audience the `aud` a token must hold
   * @param now clock, epoch ms
   * @throws {ConfigError} (exit 2) when the JWKS cannot be read or holds no usable key
   */
  static async load(trusted: TrustedIssuer, audience: string, now: () => number): Promise<JwtVerifier> {
    let doc: { keys?: unknown };
    try {
      doc = JSON.parse(await fetchBounded(trusted.jwksUri)) as { keys?: unknown };
    } catch (err) {
      throw new ConfigError(`mock-api --trusted-jwks-uri: cannot read the JWKS at ${trusted.jwksUri}: ${(err as Error).message}`);
    }
    if (typeof doc !== 'object' || doc === null) doc = {};
    const keys: Jwk[] = [];
    for (const k of Array.isArray(doc.keys) ? doc.keys : []) {
      const jwk = k as JsonWebKey & { kid?: unknown; alg?: unknown; use?: unknown };
      if (typeof jwk !== 'object' || jwk === null || typeof jwk.kty !== 'string' || (jwk.use !== undefined && jwk.use !== 'sig')) continue;
      try {
        const key = createPublicKey({ key: jwk, format: 'jwk' });
        keys.push({ kty: jwk.kty, key, ...(typeof jwk.kid === 'string' ? { kid: jwk.kid } : {}), ...(typeof jwk.alg === 'string' ? { alg: jwk.alg } : {}) });
      } catch {
        // A key node:crypto cannot read is not used.
      }
    }
    if (keys.length === 0) throw new ConfigError(`mock-api --trusted-jwks-uri: no usable signing key in the JWKS at ${trusted.jwksUri}`);
    return new JwtVerifier(trusted, audience, keys, now);
  }

  /** True when `token` is a JWT of the trusted issuer, signed by one of its keys, for the audience, not expired. */
  verify(token: string): boolean {
    if (token.length > MAX_TOKEN_LENGTH) return false;
    const parts = token.split('.');
    if (parts.length !== 3) return false;
    const header = decodeJson(parts[0]!);
    const payload = decodeJson(parts[1]!);
    if (header === undefined || payload === undefined) return false;
    const alg = typeof header['alg'] === 'string' ? ALGORITHMS[header['alg']] : undefined;
    if (alg === undefined || !Object.hasOwn(ALGORITHMS, header['alg'] as string)) return false;
    const data = Buffer.from(`${parts[0]}.${parts[1]}`);
    const signature = Buffer.from(parts[2]!, 'base64url');
    const kid = header['kid'];
    const candidates = this.keys.filter((k) => k.kty === alg.kty && (k.alg === undefined || k.alg === header['alg']) && (kid === undefined || k.kid === kid));
    const signed = candidates.some((k) => {
      try {
        const key = { key: k.key, ...(alg.pss ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: alg.pss } : {}), ...(alg.p1363 ? { dsaEncoding: 'ieee-p1363' as const } : {}) };
        return verify(alg.hash, data, key, signature);
      } catch {
        return false;
      }
    });
    return signed && this.claimsValid(payload);
  }

  private claimsValid(payload: Record<string, unknown>): boolean {
    const nowS = this.now() / 1000;
    const aud = payload['aud'];
    const audiences = Array.isArray(aud) ? aud : [aud];
    if (payload['iss'] !== this.trusted.issuer || !audiences.includes(this.audience)) return false;
    const exp = payload['exp'];
    const nbf = payload['nbf'];
    if (typeof exp !== 'number' || nowS >= exp) return false;
    return !(typeof nbf === 'number' && nowS + 5 < nbf);
  }
}

/** The JSON object in a base64url JWT segment, or `undefined`. */
function decodeJson(segment: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
