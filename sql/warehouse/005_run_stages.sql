-- Per-stage wall time and counts of each run (docs/contracts.md "Schema etl" and
-- "Progress and the run summary"): a JSON object keyed by stage (extract, sites, transform,
-- export), each `{ "durationMs": …, "failed": true?, …counts }`. Null for runs recorded
-- before this migration.
alter table etl.runs add column if not exists stages json;
