-- The event_seq of every event of int_delta_events in stg_events (docs/incremental.md "Delta
-- filters"). The typed staging models pick their delta rows by this integer, not by event_id:
-- stg_events is written in event_seq order, so DuckDB skips its row groups outside the
-- delta's range instead of reading every row of an entity to compare ids.

with

delta_events as (
    select * from {{ ref('int_delta_events') }}
),

final as (
    select stg_events.event_seq
    from {{ ref('stg_events') }} as stg_events
    where stg_events.event_id in (select event_id from delta_events)
)

select * from final
