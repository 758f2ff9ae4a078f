-- The delta of an incremental transform (docs/incremental.md): one row per event_id delivered
-- since the last transform, i.e. on a raw.events row past its stream's watermark (load order:
-- stream and stream position, never a domain or published time, so late and backfilled events
-- are new by construction). On a full rebuild the watermark is empty and every event is new.

with

watermarks as (
    select * from {{ source('etl', 'transform_watermarks') }}
),

new_deliveries as (
    select
        events.event_id,
    from {{ ref('stg_events') }} as events
    left join watermarks
        on events.stream_id = watermarks.stream_id
    where events.stream_position > coalesce(watermarks.stream_position, 0)
),

final as (
    select distinct event_id from new_deliveries
)

select * from final
