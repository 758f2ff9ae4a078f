/**
 * Plain-text rendering of {@link WarehouseStatus} for people.
 *
 * @module
 */
import type { StreamStatus, WarehouseStatus } from '../warehouse/readStatus.js';

function table(headers: string[], rows: (string | number | null)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (c ?? '').padEnd(widths[i] ?? 0)).join('  ').trimEnd()).join('\n');
}

function age(seconds: number | null): string {
  if (seconds === null) return 'never';
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86400)}d`;
}

/** The streams table of `status` and `streams`: position (events stored), cursor, transformed position. */
export function formatStreams(streams: readonly StreamStatus[]): string {
  return streams.length === 0
    ? '  (none yet: run `recruit-etl extract`)'
    : table(
        ['stream', 'status', 'env', 'position', 'transformed', 'quarantined', 'more', 'cursor age', 'filter'],
        streams.map((t) => [
          t.streamId,
          t.status,
          t.environment,
          t.events,
          t.transformedPosition,
          t.quarantined,
          t.hasNextPage === null ? null : String(t.hasNextPage),
          age(t.cursorAgeSeconds),
          t.name,
        ]),
      );
}

/** Render the status as text sections: streams, runs, rows, funnel. */
export function formatStatus(s: WarehouseStatus): string {
  const out: string[] = [`warehouse: ${s.path}`, ...(s.note ? [`note: ${s.note}`] : []), ''];
  out.push('streams');
  out.push(formatStreams(s.streams));
  out.push('', 'last runs');
  out.push(
    s.runs.length === 0
      ? '  (none)'
      : table(
          ['run', 'command', 'status', 'started', 'events', 'error'],
          s.runs.map((r) => [r.runId, r.command, r.status, r.startedAt, r.eventsLoaded, r.error]),
        ),
  );
  out.push('', 'rows');
  out.push(table(['table', 'rows'], Object.entries(s.rows).map(([k, v]) => [k, v])));
  if (s.funnel && s.funnel.length > 0) {
    out.push('', 'funnel per trial (patients ever reaching each stage)');
    const keys = Object.keys(s.funnel[0]!);
    out.push(table(keys, s.funnel.map((f) => keys.map((k) => (f[k] ?? null) as string | number | null))));
  }
  return `${out.join('\n')}\n`;
}
