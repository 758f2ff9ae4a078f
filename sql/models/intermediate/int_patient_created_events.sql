-- One row per patient-created event (v1.patient.created, v2.patient.created, ...), typed.
-- A patient created under several versions has several rows here; int_patients keeps one.

{{ config(materialized='incremental', unique_key='event_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_event_seqs') }}

with

events as (
    select * from {{ ref('int_events_deduplicated') }}
    where entity = 'patient_created'
    {% if is_incremental() %}
        -- by event_seq, not event_id: docs/incremental.md "Delta filters"
        and event_seq in (select event_seq from {{ ref('int_delta_event_seqs') }})
    {% endif %}
),

extracted as (
    select
        event_id,
        event_type,
        event_version,
        event_seq,
        stream_id,
        stream_position,
        published_at,
        extracted_at,
        trial_id,
        referral_subject_id,
        site_id,
        sponsor_site_id,
        patient_status,
        referral_received_time,
        created_time,
    from events
),

typed as (
    select
        *,
        -- GMT strings with Z or an offset go through timestamptz; bare ones are read as UTC.
        {{ utc_timestamp('referral_received_time') }} as referral_received_at,
        {{ utc_timestamp('created_time') }} as created_at,
    from extracted
),

final as (
    select
        event_id,
        event_type,
        event_version,
        trial_id,
        referral_subject_id,
        site_id,
        sponsor_site_id,
        patient_status,
        referral_received_at,
        created_at,
        coalesce(created_at, referral_received_at) as domain_at,
        published_at,
        extracted_at,
        event_seq,
        stream_id,
        stream_position,
        trial_id is not null
            and referral_subject_id is not null
            and coalesce(created_at, referral_received_at) is not null as has_required_fields,
    from typed
)

select * from final
