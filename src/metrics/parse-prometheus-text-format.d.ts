/** Types of the `parse-prometheus-text-format` package (it ships none). */
declare module 'parse-prometheus-text-format' {
  /** One sample of a family (histograms and summaries have buckets/quantiles instead). */
  export interface ParsedSample {
    value?: string;
    labels?: Record<string, string>;
  }
  /** One metric family of the text format. */
  export interface ParsedFamily {
    name: string;
    help: string;
    type: string;
    metrics: ParsedSample[];
  }
  /** Parses the Prometheus text format; throws on malformed input. */
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
