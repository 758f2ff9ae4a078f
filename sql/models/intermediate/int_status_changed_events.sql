-- One row per status-changed event, typed. patient_status is an open enum: passed through as sent.

{{ config(materialized='incremental', unique_key='event_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_event_seqs') }}

with

events as (
    select * from {{ ref('int_events_deduplicated') }}
    where entity = 'status_changed'
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
        patient_status,
        status_changed_time,
    from events
),

typed as (
    select
        *,
        {{ utc_timestamp('status_changed_time') }} as status_changed_at,
    from extracted
),

final as (
    select
        event_id,
        event_type,
        trial_id,
        referral_subject_id,
        site_id,
        patient_status,
        status_changed_at,
        status_changed_at as domain_at,
        published_at,
        extracted_at,
        event_seq,
        stream_id,
        stream_position,
        trial_id is not null
            and referral_subject_id is not null
            and patient_status is not null
            and status_changed_at is not null as has_required_fields,
    from typed
)

select * from final
