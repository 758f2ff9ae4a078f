-- One row per distinct event_id across all streams: the first delivery (lowest stream
-- position of the earliest-created stream), every event type included (known or not).
-- event_seq is the global tie-break order: stream creation order, then stream position.

with

events as (
    select * from {{ source('raw', 'events') }}
),

streams as (
    select * from {{ source('etl', 'streams') }}
),

event_types as (
    select * from {{ ref('seed_event_types') }}
),

stream_first_seen as (
    select
        events.stream_id,
        min(events.extracted_at) as first_extracted_at,
    from events
    group by events.stream_id
),

stream_ranks as (
    select
        stream_first_seen.stream_id,
        row_number() over (
            order by
                coalesce(streams.created_at, stream_first_seen.first_extracted_at),
                stream_first_seen.stream_id
        ) as stream_rank,
    from stream_first_seen
    left join streams
        on stream_first_seen.stream_id = streams.stream_id
),

deliveries as (
    select
        events.*,
        stream_ranks.stream_rank,
        row_number() over (
            partition by events.event_id
            order by stream_ranks.stream_rank, events.stream_position
        ) as delivery_number,
        count(*) over (partition by events.event_id) as delivery_count,
    from events
    inner join stream_ranks
        on events.stream_id = stream_ranks.stream_id
),

first_deliveries as (
    select * from deliveries
    where delivery_number = 1
),

final as (
    select
        first_deliveries.event_id,
        first_deliveries.event_type,
        event_types.entity,
        event_types.event_version,
        event_types.event_type is not null as is_known_type,
        row_number() over (
            order by first_deliveries.stream_rank, first_deliveries.stream_position
        ) as event_seq,
        first_deliveries.stream_id,
        first_deliveries.stream_position,
        first_deliveries.stream_rank,
        first_deliveries.delivery_count,
        first_deliveries.published_time at time zone 'UTC' as published_at,
        first_deliveries.extracted_at at time zone 'UTC' as extracted_at,
        first_deliveries.run_id,
        first_deliveries.message,
    from first_deliveries
    left join event_types
        on first_deliveries.event_type = event_types.event_type
)

select * from final
