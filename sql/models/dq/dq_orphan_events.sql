-- One row per event of a patient whose created event has not arrived (an orphan): the
-- patient is in fct_patient_funnel with has_created_event = false.

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
),

patients as (
    select * from {{ ref('int_patients') }}
    where not has_created_event
),

final as (
    select
        patient_events.event_id,
        patient_events.event_type,
        patient_events.entity,
        patient_events.patient_key,
        patient_events.trial_id,
        patient_events.referral_subject_id,
        patient_events.site_id,
        patient_events.domain_at,
        patient_events.published_at,
        patient_events.event_seq,
    from patient_events
    inner join patients
        on patient_events.patient_key = patients.patient_key
)

select * from final
