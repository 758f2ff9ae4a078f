-- One row per stream of etl.streams, renamed and cast (created_at as UTC `timestamp`).
-- int_stream_ranks orders the streams that delivered events by it.

{{ config(materialized='view') }}

with

streams as (
    select * from {{ source('etl', 'streams') }}
),

final as (
    select
        stream_id,
        created_at at time zone 'UTC' as created_at,
        status as stream_status,
    from streams
)

select * from final
