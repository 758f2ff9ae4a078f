-- One row per delivery (raw.events row), renamed and cast: times as UTC `timestamp` (a
-- published time outside 1900–2199 is not a usable time: docs/models.md "Time"); the message
-- stays JSON text, parsed once by int_events_deduplicated for first deliveries only. A view:
-- nothing is copied, and a filter on stream_id, stream_position or event_id reaches raw.events.

{{ config(materialized='view') }}

with

events as (
    select * from {{ source('raw', 'events') }}
),

final as (
    select
        stream_id,
        stream_position,
        event_id,
        event_type,
        case
            when published_time >= timestamptz '1900-01-01 00:00:00+00'
                and published_time < timestamptz '2200-01-01 00:00:00+00'
                then published_time at time zone 'UTC'
        end as published_at,
        extracted_at at time zone 'UTC' as extracted_at,
        run_id,
        message,
    from events
)

select * from final
