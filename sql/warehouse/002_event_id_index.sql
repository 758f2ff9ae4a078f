-- Job state for the raw writer's exactly-once check (docs/contracts.md guarantee 1): a narrow
-- side table of 64-bit hashes of the event ids already on each stream, written in the
-- same transaction as raw.events. Probing it costs a scan of 8-byte hashes instead of
-- the event_id strings of raw.events; the few hash hits are then compared exactly.
create table if not exists etl.event_ids (
    stream_id       varchar not null,
    id_hash         ubigint not null,
    stream_position bigint  not null
);

insert into etl.event_ids
select stream_id, hash(event_id), stream_position from raw.events;
