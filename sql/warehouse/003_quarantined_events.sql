-- Quarantine (docs/ingest.md "Quarantine"): one row per event whose text DuckDB's JSON reader
-- refuses (e.g. a lone surrogate escape). The event keeps its place in raw.events, in a form
-- every model reads; its text exactly as sent is kept here. Append-only, like raw.events.
create table if not exists raw.quarantined_events (
    stream_id        varchar     not null,
    stream_position  bigint      not null,
    event_id         varchar     not null,
    reason           varchar     not null,
    body             varchar     not null,
    run_id           varchar     not null,
    quarantined_at   timestamptz not null
);
