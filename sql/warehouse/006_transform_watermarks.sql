-- Incremental transform state (docs/incremental.md), written in the same transaction as the
-- models it describes, so that a transform killed anywhere leaves models and watermark as
-- the previous successful transform left them.
--
-- One row per stream: the highest raw.events.stream_position the models have read (the load
-- order, never a domain or published time) and the stream's rank in staging's delivery order
-- when it was read (a changed rank forces a full rebuild).
create table if not exists etl.transform_watermarks (
    stream_id        varchar not null,
    stream_position  bigint  not null,
    stream_rank      bigint  not null
);

-- One row: what the models were last built from. models_hash is a digest of the compiled
-- models and seeds: new or changed model files force a full rebuild.
create table if not exists etl.transform_state (
    models_hash  varchar     not null,
    mode         varchar     not null,
    built_at     timestamptz not null
);
