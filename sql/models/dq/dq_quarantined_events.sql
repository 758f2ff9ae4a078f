-- One row per quarantined event (docs/ingest.md "Quarantine"): its text as sent is not
-- valid JSON for DuckDB (e.g. a lone surrogate escape), so raw.events holds it in a readable
-- form and raw.quarantined_events keeps the text as sent. The text itself (patient data) is
-- not copied here.

with

quarantined as (
    select * from {{ source('raw', 'quarantined_events') }}
),

final as (
    select
        stream_id,
        stream_position,
        event_id,
        reason,
        run_id,
        quarantined_at at time zone 'UTC' as quarantined_at,
    from quarantined
)

select * from final
