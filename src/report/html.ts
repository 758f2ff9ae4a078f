/**
 * HTML building with escaping by default: the {@link html} tag escapes every interpolated
 * value unless it is already {@link SafeHtml} (built by the tag itself, or an SVG rendered
 * by Vega, see {@link trustedSvg}). Text from the data (trial ids, site ids and names,
 * statuses, event types) can only reach the page escaped (docs/security.md "The report").
 *
 * @module
 */

/** A fragment of HTML that is safe to insert as it is. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A value the {@link html} tag accepts: text and numbers are escaped, arrays joined. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('');
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<td>${siteName}</td>\`` escapes `siteName`. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/**
 * An SVG string rendered by Vega (src/report/charts.ts), which escapes the texts it writes.
 * Checked to be one `<svg>` element with no `<script>`, `<foreignObject>` or event-handler
 * attribute in any tag, as a second guard.
 *
 * @throws Error when the string is not such an SVG
 */
export function trustedSvg(svg: string): SafeHtml {
  // Attribute values blanked first: escaped data inside them (aria-label) is text, not markup.
  const tags = svg.replace(/"[^"]*"/g, '""');
  if (
    !svg.startsWith('<svg') ||
    !svg.endsWith('</svg>') ||
    /<(script|foreignObject|iframe)\b/i.test(tags) ||
    /<[^<>]*\son[a-z]+\s*=/i.test(tags)
  ) {
    throw new Error('a chart is not a plain SVG');
  }
  return new SafeHtml(svg);
}
