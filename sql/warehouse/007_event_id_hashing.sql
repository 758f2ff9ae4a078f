-- The DuckDB hash() that filled etl.event_ids, as the hash of a fixed probe string
-- (docs/ingest.md "Redeliveries"). DuckDB does not promise hash() across versions; when the
-- probe's hash differs from the stored one, or none is stored beside existing hashes, the
-- extract computes every id hash again before its first batch (src/warehouse/RawEventWriter.ts).
create table if not exists etl.event_id_hashing (
    probe_hash ubigint not null
);
