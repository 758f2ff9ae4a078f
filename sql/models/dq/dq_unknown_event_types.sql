-- One row per event type present in raw.events but not in seed_event_types (kept in raw and int_events_deduplicated,
-- out of the typed event models). A null type (neither eventType nor name sent) is reported as such.

with

events as (
    select * from {{ ref('int_events_deduplicated') }}
    where not is_known_type
),

final as (
    select
        event_type,
        count(*) as event_count,
        min(event_seq) as first_event_seq,
        min(published_at) as first_published_at,
        max(published_at) as last_published_at,
    from events
    group by event_type
)

select * from final
