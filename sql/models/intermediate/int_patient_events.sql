-- One row per valid event of a known patient entity (created, acknowledged, status changed,
-- contact attempt): the patient keys, the domain time that orders business history, and
-- publication lag. Events missing a key or their domain time are left to dq_invalid_events.

{{ config(materialized='incremental', unique_key='patient_key', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

patients_created as (
    select * from {{ ref('int_patient_created_events') }} as source_rows
    where has_required_fields
    {% if is_incremental() %}
        and (source_rows.trial_id, source_rows.referral_subject_id) in (
            -- a semi-join on the pair, not EXISTS: docs/incremental.md "Delta filters"
            select trial_id, referral_subject_id from {{ ref('int_delta_patients') }}
        )
    {% endif %}
),

referral_acknowledgements as (
    select * from {{ ref('int_referral_acknowledged_events') }} as source_rows
    where has_required_fields
    {% if is_incremental() %}
        and (source_rows.trial_id, source_rows.referral_subject_id) in (
            -- a semi-join on the pair, not EXISTS: docs/incremental.md "Delta filters"
            select trial_id, referral_subject_id from {{ ref('int_delta_patients') }}
        )
    {% endif %}
),

status_changes as (
    select * from {{ ref('int_status_changed_events') }} as source_rows
    where has_required_fields
    {% if is_incremental() %}
        and (source_rows.trial_id, source_rows.referral_subject_id) in (
            -- a semi-join on the pair, not EXISTS: docs/incremental.md "Delta filters"
            select trial_id, referral_subject_id from {{ ref('int_delta_patients') }}
        )
    {% endif %}
),

contact_attempts as (
    select * from {{ ref('int_contact_attempt_events') }} as source_rows
    where has_required_fields
    {% if is_incremental() %}
        and (source_rows.trial_id, source_rows.referral_subject_id) in (
            -- a semi-join on the pair, not EXISTS: docs/incremental.md "Delta filters"
            select trial_id, referral_subject_id from {{ ref('int_delta_patients') }}
        )
    {% endif %}
),

created_flagged as (
    -- Only created events can be redundant: number them among the patient's created events.
    select
        *,
        row_number() over (
            partition by trial_id, referral_subject_id
            order by domain_at, event_seq
        ) > 1 as is_redundant_created,
    from patients_created
),

unioned as (
    select
        event_id, event_type, 'patient_created' as entity, trial_id, referral_subject_id,
        site_id, domain_at, published_at, extracted_at, event_seq, stream_id, stream_position,
        is_redundant_created,
    from created_flagged
    union all
    select
        event_id, event_type, 'referral_acknowledged' as entity, trial_id, referral_subject_id,
        site_id, domain_at, published_at, extracted_at, event_seq, stream_id, stream_position,
        false as is_redundant_created,
    from referral_acknowledgements
    union all
    select
        event_id, event_type, 'status_changed' as entity, trial_id, referral_subject_id,
        site_id, domain_at, published_at, extracted_at, event_seq, stream_id, stream_position,
        false as is_redundant_created,
    from status_changes
    union all
    select
        event_id, event_type, 'contact_attempt' as entity, trial_id, referral_subject_id,
        site_id, domain_at, published_at, extracted_at, event_seq, stream_id, stream_position,
        false as is_redundant_created,
    from contact_attempts
),

flagged as (
    select
        *,
        {{ patient_key('trial_id', 'referral_subject_id') }} as patient_key,
        -- A contact attempt carries only a date: its lag counts from the end of that day.
        date_diff(
            'millisecond',
            case when entity = 'contact_attempt' then domain_at + interval 1 day else domain_at end,
            published_at
        ) / 3600000.0 as publish_lag_hours,
    from unioned
),

final as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        event_id,
        event_type,
        entity,
        site_id,
        domain_at,
        published_at,
        extracted_at,
        publish_lag_hours,
        -- Late: published more than 24 hours after its domain time (a backfill or a late entry).
        coalesce(publish_lag_hours > 24, false) as is_late,
        -- Future-dated: a domain time more than a day after the job could have seen the event
        -- (its publication, else its extraction): a mistyped date, kept out of as_of_at.
        domain_at > coalesce(published_at, extracted_at) + interval 1 day as is_future_dated,
        is_redundant_created,
        event_seq,
        stream_id,
        stream_position,
    from flagged
)

select * from final
