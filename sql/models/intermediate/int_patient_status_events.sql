-- One row per status observation of a patient: the status on the patient's first created
-- event plus every status-changed event, mapped through seed_patient_status_stages
-- (unknown values: stage 'unmapped', no rank), in domain order with event order as tie-break.

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

status_stages as (
    select * from {{ ref('seed_patient_status_stages') }}
),

created_statuses as (
    select
        trial_id,
        referral_subject_id,
        event_id,
        event_type,
        'patient_created' as entity,
        patient_status,
        domain_at as status_at,
        published_at,
        event_seq,
    from patients_created
    where patient_status is not null
    qualify row_number() over (
        partition by trial_id, referral_subject_id
        order by domain_at, event_seq
    ) = 1
),

changed_statuses as (
    select
        trial_id,
        referral_subject_id,
        event_id,
        event_type,
        'status_changed' as entity,
        patient_status,
        status_changed_at as status_at,
        published_at,
        event_seq,
    from status_changes
),

unioned as (
    select * from created_statuses
    union all
    select * from changed_statuses
),

final as (
    select
        {{ patient_key('unioned.trial_id', 'unioned.referral_subject_id') }} as patient_key,
        unioned.trial_id,
        unioned.referral_subject_id,
        unioned.event_id,
        unioned.event_type,
        unioned.entity,
        unioned.patient_status,
        unioned.status_at,
        unioned.published_at,
        unioned.event_seq,
        row_number() over (
            partition by unioned.trial_id, unioned.referral_subject_id
            order by unioned.status_at, unioned.event_seq
        ) as status_event_number,
        -- Backfilled: it arrived after an event of the same patient with a later domain time.
        coalesce(
            unioned.status_at < max(unioned.status_at) over (
                partition by unioned.trial_id, unioned.referral_subject_id
                order by unioned.event_seq
                rows between unbounded preceding and 1 preceding
            ),
            false
        ) as is_out_of_order,
        status_stages.patient_status is not null as is_mapped,
        coalesce(status_stages.stage, 'unmapped') as stage,
        status_stages.stage_rank,
        status_stages.implied_rank,
        status_stages.path_order,
        coalesce(status_stages.outcome_category, 'unmapped') as outcome_category,
        status_stages.is_terminal,
        coalesce(status_stages.implies_contact, false) as implies_contact,
    from unioned
    left join status_stages
        on unioned.patient_status = status_stages.patient_status
)

select * from final
