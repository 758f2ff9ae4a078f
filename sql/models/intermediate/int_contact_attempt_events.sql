-- One row per contact-attempt event, both spellings (v1.contactAttempt.created and
-- v1.patient.contactAttempt.created) in one model. Several events may share one
-- contact_attempt_id; int_contact_attempts makes them one attempt.

{{ config(materialized='incremental', unique_key='event_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_event_seqs') }}

with

events as (
    select * from {{ ref('int_events_deduplicated') }}
    where entity = 'contact_attempt'
    {% if is_incremental() %}
        -- by event_seq, not event_id: docs/incremental.md "Delta filters"
        and event_seq in (select event_seq from {{ ref('int_delta_event_seqs') }})
    {% endif %}
),

extracted as (
    select
        event_id,
        event_type,
        event_seq,
        stream_id,
        stream_position,
        published_at,
        extracted_at,
        trial_id,
        referral_subject_id,
        site_id,
        contact_attempt_id,
        contact_attempt_date_text,
        created_time,
        case
            when json_type(contact_attempt_outcomes_json) = 'ARRAY'
                then list_filter(
                    json_extract_string(contact_attempt_outcomes_json, '$[*]'),
                    lambda outcome: outcome is not null
                )
        end as contact_attempt_outcomes,
    from events
),

typed as (
    select
        *,
        {{ utc_timestamp('created_time') }} as created_at,
        coalesce(
            try_cast(contact_attempt_date_text as date),
            try_cast(left(contact_attempt_date_text, 10) as date)
        ) as parsed_contact_attempt_date,
    from extracted
),

bounded as (
    -- a date outside 1900–2199 is not a usable date (docs/models.md "Time")
    select
        *,
        case
            when parsed_contact_attempt_date >= date '1900-01-01'
                and parsed_contact_attempt_date < date '2200-01-01'
                then parsed_contact_attempt_date
        end as contact_attempt_date,
    from typed
),

final as (
    select
        event_id,
        event_type,
        contact_attempt_id,
        trial_id,
        referral_subject_id,
        site_id,
        contact_attempt_date,
        created_at,
        coalesce(contact_attempt_outcomes, []::varchar[]) as contact_attempt_outcomes,
        cast(contact_attempt_date as timestamp) as domain_at,
        published_at,
        extracted_at,
        event_seq,
        stream_id,
        stream_position,
        contact_attempt_id is not null
            and trial_id is not null
            and referral_subject_id is not null
            and contact_attempt_date is not null as has_required_fields,
    from bounded
)

select * from final
