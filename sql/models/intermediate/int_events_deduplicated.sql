-- One row per distinct event_id across all streams: the first delivery (lowest stream
-- position of the earliest-created stream), every event type included (known or not).
-- event_seq is the global tie-break order: stream creation order (int_stream_ranks), then stream
-- position, as stream_rank * 10^12 + stream_position: an event's number never depends on
-- which other events exist, so the incremental transform adds events without renumbering.
-- The message is parsed here, once, into the text of every field the models read
-- (`message ->> 'field'` semantics: strings unquoted, other values as JSON text, absent or
-- null as NULL); the typed int_ models of each entity cast them. Later models never touch JSON.
-- Performance: deduplication and numbering run on the narrow keys only; the wide row is
-- joined back and parsed once, for first deliveries only. `not materialized` keeps DuckDB
-- from copying raw.events (messages included) into a CTE buffer. stg_events is a view of
-- raw.events (renamed and cast), so every filter below reaches the raw table.

{{ config(materialized='incremental', unique_key='event_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_events') }}

with

events as not materialized (
    select * from {{ ref('stg_events') }}
    {% if is_incremental() %}
    -- every delivery of the events delivered since the last transform (docs/incremental.md)
    where event_id in (select event_id from {{ ref('int_delta_events') }})
    {% endif %}
),

stream_ranks as (
    select * from {{ ref('int_stream_ranks') }}
),

event_types as (
    select * from {{ ref('seed_event_types') }}
),

first_deliveries as (
    select
        events.stream_id,
        events.stream_position,
        stream_ranks.stream_rank,
        count(*) over (partition by events.event_id) as delivery_count,
    from events
    inner join stream_ranks
        on events.stream_id = stream_ranks.stream_id
    qualify row_number() over (
        partition by events.event_id
        order by stream_ranks.stream_rank, events.stream_position
    ) = 1
),

sequenced as (
    -- The order of first deliveries as a number that does not depend on the other events:
    -- stream rank, then stream position (positions stay below 10^12).
    select
        *,
        stream_rank * 1000000000000 + stream_position as event_seq,
    from first_deliveries
),

parsed as (
    select
        sequenced.event_seq,
        sequenced.stream_rank,
        sequenced.delivery_count,
        events.stream_id,
        events.stream_position,
        events.event_id,
        events.event_type,
        events.published_at,
        events.extracted_at,
        events.run_id,
        json_transform(
            events.message,
            '{
                "trialId": "VARCHAR",
                "referralSubjectId": "VARCHAR",
                "siteId": "VARCHAR",
                "sponsorSiteId": "VARCHAR",
                "patientStatus": "VARCHAR",
                "referralReceivedTime": "VARCHAR",
                "createdTime": "VARCHAR",
                "referralAcknowledgedTime": "VARCHAR",
                "statusChangedTime": "VARCHAR",
                "contactAttemptId": "VARCHAR",
                "contactAttemptDate": "VARCHAR",
                "contactAttemptOutcomes": "JSON"
            }'
        ) as message_fields,
    from sequenced
    -- raw itself (through the view), not the filtered CTE: joined on its key, DuckDB skips the
    -- row groups outside the first deliveries' positions before it reads a message
    -- (docs/incremental.md "Delta filters")
    inner join {{ ref('stg_events') }} as events
        on sequenced.stream_id = events.stream_id
        and sequenced.stream_position = events.stream_position
),

final as (
    select
        parsed.event_id,
        parsed.event_type,
        event_types.entity,
        event_types.event_version,
        event_types.event_type is not null as is_known_type,
        parsed.event_seq,
        parsed.stream_id,
        parsed.stream_position,
        parsed.stream_rank,
        parsed.delivery_count,
        parsed.published_at,
        parsed.extracted_at,
        parsed.run_id,
        -- message fields as sent (text); typed in the int_ model of each entity
        parsed.message_fields.trialId as trial_id,
        parsed.message_fields.referralSubjectId as referral_subject_id,
        parsed.message_fields.siteId as site_id,
        parsed.message_fields.sponsorSiteId as sponsor_site_id,
        parsed.message_fields.patientStatus as patient_status,
        parsed.message_fields.referralReceivedTime as referral_received_time,
        parsed.message_fields.createdTime as created_time,
        parsed.message_fields.referralAcknowledgedTime as referral_acknowledged_time,
        parsed.message_fields.statusChangedTime as status_changed_time,
        parsed.message_fields.contactAttemptId as contact_attempt_id,
        parsed.message_fields.contactAttemptDate as contact_attempt_date_text,
        parsed.message_fields.contactAttemptOutcomes as contact_attempt_outcomes_json,
    from parsed
    left join event_types
        on parsed.event_type = event_types.event_type
)

select * from final
