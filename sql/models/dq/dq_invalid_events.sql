-- One row per event of a known type that lacks a field the models need (trial, subject,
-- domain time, status, contact attempt id) or whose time does not parse: kept out of the
-- patient models.

with

patients_created as (
    select event_id, event_type, trial_id, referral_subject_id, event_seq,
    from {{ ref('int_patient_created_events') }}
    where not has_required_fields
),

referral_acknowledgements as (
    select event_id, event_type, trial_id, referral_subject_id, event_seq,
    from {{ ref('int_referral_acknowledged_events') }}
    where not has_required_fields
),

status_changes as (
    select event_id, event_type, trial_id, referral_subject_id, event_seq,
    from {{ ref('int_status_changed_events') }}
    where not has_required_fields
),

contact_attempts as (
    select event_id, event_type, trial_id, referral_subject_id, event_seq,
    from {{ ref('int_contact_attempt_events') }}
    where not has_required_fields
),

final as (
    select * from patients_created
    union all
    select * from referral_acknowledgements
    union all
    select * from status_changes
    union all
    select * from contact_attempts
)

select * from final
