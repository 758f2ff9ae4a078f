-- The event_seq of every event of int_delta_events in int_events_deduplicated
-- (docs/incremental.md "Delta filters"). The typed event models (int_patient_created_events, …)
-- pick their delta rows by this integer, not by event_id: int_events_deduplicated is written
-- in event_seq order, so DuckDB skips its row groups outside the delta's range instead of
-- reading every row of an entity to compare ids.

with

delta_events as (
    select * from {{ ref('int_delta_events') }}
),

final as (
    select events.event_seq
    from {{ ref('int_events_deduplicated') }} as events
    where events.event_id in (select event_id from delta_events)
)

select * from final
