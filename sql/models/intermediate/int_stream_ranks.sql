-- One row per stream that delivered events: its rank in the delivery order (stream creation
-- order; a stream without an etl.streams row ranks by its first extraction).
-- int_events_deduplicated numbers events by (stream_rank, stream_position); the incremental
-- transform rebuilds everything when a stream's rank changes, and stores the rank with the
-- watermark (docs/incremental.md).

with

stream_first_seen as (
    select
        stream_id,
        min(extracted_at) as first_extracted_at,
    from {{ ref('stg_events') }}
    group by stream_id
),

streams as (
    select * from {{ ref('stg_streams') }}
),

final as (
    select
        stream_first_seen.stream_id,
        row_number() over (
            order by
                coalesce(streams.created_at, stream_first_seen.first_extracted_at),
                stream_first_seen.stream_id
        ) as stream_rank,
        streams.stream_status,
    from stream_first_seen
    left join streams
        on stream_first_seen.stream_id = streams.stream_id
)

select * from final
