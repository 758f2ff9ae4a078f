-- One row per stream that delivered events: its rank in staging's delivery order (stream
-- creation order; a stream without an etl.streams row ranks by its first extraction).
-- stg_events numbers events by (stream_rank, stream_position); the incremental transform
-- rebuilds everything when a stream's rank changes (docs/incremental.md).

with

stream_first_seen as (
    select
        stream_id,
        min(extracted_at) as first_extracted_at,
    from {{ source('raw', 'events') }}
    group by stream_id
),

streams as (
    select * from {{ source('etl', 'streams') }}
),

final as (
    select
        stream_first_seen.stream_id,
        row_number() over (
            order by
                coalesce(streams.created_at, stream_first_seen.first_extracted_at),
                stream_first_seen.stream_id
        ) as stream_rank,
        streams.status as stream_status,
    from stream_first_seen
    left join streams
        on stream_first_seen.stream_id = streams.stream_id
)

select * from final
