-- Raw and job-state schemas of the warehouse contract (docs/contracts.md "Warehouse tables").
-- raw.* is append-only: rows are never updated or deleted.

create schema if not exists raw;
create schema if not exists etl;

-- One row per event delivered on a stream; (stream_id, stream_position) is THE order key.
-- The keys (stream_id, stream_position) and (stream_id, event_id) are unique by construction
-- of the writer (positions follow the stored count in the same transaction; ids are checked
-- against etl.event_ids) and by test, not by declared constraints: DuckDB keeps a constraint's
-- ART index in memory, and its size would grow with the stream (measured: 45 MB at 300,000
-- events), against the flat memory the extractor must keep.
create table if not exists raw.events (
    stream_id        varchar     not null,
    stream_position  bigint      not null,
    event_id         varchar     not null,
    event_type       varchar,
    published_time   timestamptz,
    message          json,
    envelope         json        not null,
    run_id           varchar     not null,
    extracted_at     timestamptz not null
);

-- One row per site per `sites` run (docs/upstream.md "Site list" fields in snake_case).
create table if not exists raw.site_snapshots (
    run_id          varchar     not null,
    fetched_at      timestamptz not null,
    microsite_id    varchar     not null,
    trial_id        varchar     not null,
    site_id         varchar,
    display_name    varchar,
    site_name       varchar,
    sponsor_site_id varchar,
    street          varchar,
    address1        varchar,
    address2        varchar,
    city            varchar,
    state           varchar,
    postal_code     varchar,
    country         varchar,
    phone_number    varchar,
    latitude        double,
    longitude       double,
    record          json        not null
);

-- One row per stream: a query (trial ids x event types) against one API origin, with its cursor.
create table if not exists etl.streams (
    stream_id       varchar     primary key,
    name            varchar     not null,
    environment     varchar     not null,
    api_origin      varchar     not null,
    trial_ids       varchar[]   not null,
    event_types     varchar[]   not null,
    next_page       varchar,
    has_next_page   boolean,
    event_count     bigint      not null default 0,
    status          varchar     not null default 'active',
    created_at      timestamptz not null,
    updated_at      timestamptz not null,
    last_polled_at  timestamptz,
    retired_at      timestamptz
);

-- One row per command run.
create table if not exists etl.runs (
    run_id          varchar     primary key,
    command         varchar     not null,
    environment     varchar,
    started_at      timestamptz not null,
    finished_at     timestamptz,
    status          varchar     not null,
    events_loaded   bigint      not null default 0,
    pages_fetched   bigint      not null default 0,
    sites_loaded    bigint      not null default 0,
    models_built    bigint      not null default 0,
    files_exported  bigint      not null default 0,
    summary         json,
    error           varchar
);

create table if not exists etl.schema_migrations (
    version    integer     primary key,
    name       varchar     not null,
    applied_at timestamptz not null
);
