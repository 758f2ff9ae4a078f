/**
 * Plain-text rendering of {@link WarehouseStatus} for people (`recruit-etl status`); machines
 * read `status --json` (docs/contracts.md "status --json").
 *
 * @module
 */
import { MODEL_LAYERS } from '../catalog/catalog.js';
import { formatAge } from '../log/progress.js';
import type { RunStages, StreamStatus, WarehouseStatus } from '../warehouse/readStatus.js';

function table(headers: string[], rows: (string | number | null)[][]): string {
  const cells = [
    headers,
    ...rows.map((r) => r.map((c) => (c === null ? '-' : typeof c === 'number' ? c.toLocaleString('en-US') : String(c)))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (c ?? '').padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function duration(seconds: number | null): string | null {
  if (seconds === null) return null;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(Math.round(seconds % 60)).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.round((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

/** `extract 3.0s, transform 1.0s, …` from a run's stages. */
function stageTimes(stages: RunStages | null): string | null {
  if (!stages) return null;
  const parts = Object.entries(stages).map(([name, st]) => `${name} ${duration(st.durationMs / 1000)}${st.failed ? '!' : ''}`);
  return parts.length ? parts.join(', ') : null;
}

/** The streams table of `status` and `streams`: origin, position (events stored), transformed position, cursor state and age. */
export function formatStreams(streams: readonly StreamStatus[]): string {
  return streams.length === 0
    ? '  (none yet: run `recruit-etl extract`)'
    : table(
        ['stream', 'status', 'env', 'origin', 'position', 'transformed', 'quarantined', 'cursor', 'cursor age', 'filter'],
        streams.map((t) => [
          t.streamId,
          t.status,
          t.environment,
          t.origin,
          t.events,
          t.transformedPosition,
          t.quarantined,
          t.cursorState,
          formatAge(t.cursorAgeSeconds),
          t.name,
        ]),
      );
}

/** How many of the catalog's models are built, per layer, and which are missing. */
function formatModels(models: WarehouseStatus['models']): string {
  const layers = [...MODEL_LAYERS, 'other'].filter((l) => models.some((m) => (m.layer ?? 'other') === l));
  const built = (ms: typeof models): string => `${ms.filter((m) => m.built).length} of ${ms.length}`;
  const lines = [
    `  ${built(models)} built (${layers.map((l) => `${l} ${built(models.filter((m) => (m.layer ?? 'other') === l))}`).join(', ')})`,
  ];
  const missing = models.filter((m) => !m.built).map((m) => m.name);
  if (missing.length > 0) lines.push(`  not built: ${missing.join(', ')} (run \`recruit-etl transform\`)`);
  return lines.join('\n');
}

/** Render the status as text sections: freshness, streams, runs, data quality, rows, models, funnel. */
export function formatStatus(s: WarehouseStatus): string {
  const out: string[] = [
    `warehouse: ${s.path}${s.source === 'published copy' ? ' (published copy)' : ''}`,
    ...(s.note ? [`note: ${s.note}`] : []),
    ...(s.warning ? [`warning: ${s.warning}`] : []),
    '',
  ];
  const f = s.freshness;
  const when = (r: { finishedAt: string; ageSeconds: number; command: string; runId: string } | null): string =>
    r ? `${r.finishedAt} (${formatAge(r.ageSeconds)} ago, ${r.command} ${r.runId})` : 'never';
  out.push('freshness');
  out.push(
    table(
      ['', ''],
      [
        ['last successful run', when(f.lastSuccessfulRun)],
        ['last successful extract', when(f.lastSuccessfulExtract)],
        ['newest event published', f.newestEventPublishedAt ?? 'none'],
        ['cursor age', f.cursorAgeSeconds === null ? 'never polled' : formatAge(f.cursorAgeSeconds)],
      ],
    )
      .split('\n')
      .slice(1)
      .map((l) => `  ${l}`)
      .join('\n'),
  );
  out.push('', 'streams');
  out.push(formatStreams(s.streams));
  out.push('', 'last runs (stage times; ! = the stage that failed)');
  out.push(
    s.runs.length === 0
      ? '  (none)'
      : table(
          ['run', 'command', 'status', 'started', 'took', 'events', 'pages', 'models', 'files', 'stages', 'error'],
          s.runs.map((r) => [
            r.runId,
            r.command,
            r.status,
            r.startedAt,
            duration(r.durationSeconds),
            r.eventsLoaded,
            r.pagesFetched,
            r.modelsBuilt,
            r.filesExported,
            stageTimes(r.stages),
            r.error,
          ]),
        ),
  );
  out.push('', 'data quality (dq_summary as last built; details in the dq_* model of each check)');
  out.push(
    s.dataQuality === null
      ? '  (no models yet: run `recruit-etl transform`)'
      : table(
          ['check', 'issues'],
          Object.entries(s.dataQuality).map(([k, v]) => [k, v]),
        ),
  );
  out.push('', 'rows');
  out.push(
    table(
      ['table', 'rows'],
      Object.entries(s.rows).map(([k, v]) => [k, v]),
    ),
  );
  out.push('', 'models (the catalog of this build)', formatModels(s.models));
  if (s.funnel && s.funnel.length > 0) {
    out.push('', 'funnel per trial (mart_recruitment_funnel: referred patients ever reaching each stage; orphans are in dq_orphan_events)');
    out.push(
      table(
        ['trial', 'referrals', 'pre_screening', 'visit_scheduled', 'screening', 'enrolled'],
        s.funnel.map((r) => [r.trial, r.referrals, r.pre_screening, r.visit_scheduled, r.screening, r.enrolled]),
      ),
    );
  }
  return `${out.join('\n')}\n`;
}
