-- The contact attempts an incremental transform recomputes (docs/incremental.md): every
-- attempt owned by a patient of int_delta_patients (owner: the patient of the attempt's first
-- valid event, as in int_contact_attempts). An attempt's number and days since referral depend
-- on its owner's other attempts and referral time; an attempt whose owner changed had a new
-- event, so both its old and its new owner are in int_delta_patients.

with

delta_patients as (
    select * from {{ ref('int_delta_patients') }}
),

attempt_events as (
    select * from {{ ref('int_contact_attempt_events') }}
    where has_required_fields
),

candidates as (
    -- attempts with an event of a delta patient: every attempt a delta patient owns
    select distinct attempt_events.contact_attempt_id
    from attempt_events
    inner join delta_patients
        on attempt_events.trial_id = delta_patients.trial_id
        and attempt_events.referral_subject_id = delta_patients.referral_subject_id
),

owners as (
    select
        contact_attempt_id,
        arg_min(
            {'trial_id': trial_id, 'referral_subject_id': referral_subject_id},
            event_seq
        ) as owner,
    from attempt_events
    where contact_attempt_id in (select contact_attempt_id from candidates)
    group by contact_attempt_id
),

final as (
    select owners.contact_attempt_id
    from owners
    inner join delta_patients
        on owners.owner.trial_id = delta_patients.trial_id
        and owners.owner.referral_subject_id = delta_patients.referral_subject_id
)

select * from final
