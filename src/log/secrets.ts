/**
 * The one place that knows the secret values of a run: the client secret from the
 * configuration and every access token issued while the run goes on. Text on its way out
 * (log lines, the stderr error line, `etl.runs`) goes through {@link SecretRegistry.scrub},
 * which replaces every occurrence of a known value with `[redacted]` (docs/security.md).
 *
 * Key-based redaction (pino `redact` paths) cannot catch a secret that an upstream echoes
 * inside an ordinary string, e.g. an OAuth `error_description`; this catches it by value.
 *
 * The CLI creates one registry per invocation and hands it down; the library never reads a
 * global one.
 *
 * @module
 */

/** What a known secret value is replaced with. */
export const REDACTED = '[redacted]';

/**
 * Shortest value registered, in characters. A shorter value cannot be told apart from
 * ordinary text (scrubbing it would rewrite keys and numbers of every log line), so it is
 * not registered; real client secrets and tokens are far longer.
 */
export const MIN_SECRET_LENGTH = 8;

/**
 * How many issued tokens are remembered (the newest ones). A run issues one token per
 * lifetime; an evicted token expired long ago. Pinned secrets are never evicted.
 */
export const MAX_TOKENS = 64;

/** Secret values of one run and the scrubber that removes them from text. */
export class SecretRegistry {
  private readonly pinned = new Set<string>();
  private readonly tokens: string[] = [];
  /** Every form searched for, longest first; rebuilt on change. */
  private forms: string[] = [];

  /** Number of values registered (pinned secrets and remembered tokens). */
  get size(): number {
    return this.pinned.size + this.tokens.length;
  }

  /**
   * Registers a secret for the whole run (the client secret). `undefined`, empty and
   * values shorter than {@link MIN_SECRET_LENGTH} are ignored.
   */
  addSecret(value: string | undefined | null): void {
    if (!registrable(value) || this.pinned.has(value)) return;
    this.pinned.add(value);
    this.rebuild();
  }

  /**
   * Registers an issued access token (the newest {@link MAX_TOKENS} are kept). A token shaped
   * like a JWT also registers its signature segment, which must not leak on its own.
   */
  addToken(value: string | undefined | null): void {
    if (!registrable(value) || this.pinned.has(value) || this.tokens.includes(value)) return;
    this.tokens.push(value);
    if (this.tokens.length > MAX_TOKENS) this.tokens.shift();
    this.rebuild();
  }

  /** True when `text` holds a registered value (in any of its searched forms). */
  contains(text: string): boolean {
    for (const form of this.forms) if (text.includes(form)) return true;
    return false;
  }

  /**
   * `text` with every registered value, its JSON-escaped form and its percent-encoded form
   * replaced by {@link REDACTED}. Returns `text` itself when nothing is registered or found.
   */
  scrub(text: string): string {
    const forms = this.forms;
    if (forms.length === 0) return text;
    let out = text;
    for (const form of forms) {
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    }
    return out;
  }

  private rebuild(): void {
    const all = new Set<string>();
    const addForms = (v: string): void => {
      all.add(v);
      // As it appears inside a JSON string (log lines, stored JSON).
      all.add(JSON.stringify(v).slice(1, -1));
      // As it appears in a URL or a form body.
      all.add(encodeURIComponent(v));
    };
    for (const v of this.pinned) addForms(v);
    for (const t of this.tokens) {
      addForms(t);
      const parts = t.split('.');
      if (parts.length === 3 && registrable(parts[2])) addForms(parts[2]!);
    }
    this.forms = [...all].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  }
}

function registrable(value: string | undefined | null): value is string {
  return typeof value === 'string' && value.length >= MIN_SECRET_LENGTH;
}
