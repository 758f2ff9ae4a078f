-- One row per contact_attempt_id, however many events (and spellings) carried it: the
-- attempt's facts from its first event, outcomes from all of them, its number per patient.

with

contact_attempt_events as (
    select * from {{ ref('stg_contact_attempts') }}
    where has_required_fields
),

attempt_outcomes as (
    select * from {{ ref('fct_contact_attempt_outcomes') }}
),

patients as (
    select * from {{ ref('int_patients') }}
),

first_events as (
    select *
    from contact_attempt_events
    qualify row_number() over (partition by contact_attempt_id order by event_seq) = 1
),

event_summary as (
    select
        contact_attempt_id,
        count(*) as event_count,
        list(distinct event_type order by event_type) as event_types,
        min(event_seq) as first_event_seq,
    from contact_attempt_events
    group by contact_attempt_id
),

outcome_summary as (
    select
        contact_attempt_id,
        list(contact_attempt_outcome order by outcome_order) as contact_attempt_outcomes,
        count(*) as outcome_count,
        count(*) filter (where is_mapped) as mapped_outcome_count,
        bool_or(is_reached) as any_reached,
        list(contact_attempt_outcome order by outcome_order) filter (where not is_mapped) as unmapped_outcomes,
    from attempt_outcomes
    group by contact_attempt_id
),

joined as (
    select
        first_events.contact_attempt_id,
        md5(json_array(first_events.trial_id, first_events.referral_subject_id)::varchar) as patient_key,
        first_events.trial_id,
        first_events.referral_subject_id,
        first_events.site_id,
        first_events.contact_attempt_date,
        first_events.created_at,
        first_events.event_id as first_event_id,
        event_summary.event_count,
        event_summary.event_types,
        event_summary.first_event_seq,
        coalesce(outcome_summary.contact_attempt_outcomes, []::varchar[]) as contact_attempt_outcomes,
        coalesce(outcome_summary.outcome_count, 0) as outcome_count,
        coalesce(outcome_summary.unmapped_outcomes, []::varchar[]) as unmapped_outcomes,
        -- Tri-state: true when a mapped outcome means reached, false when mapped outcomes
        -- exist and none does, null when no outcome is known or all are unmapped.
        case
            when outcome_summary.any_reached then true
            when outcome_summary.mapped_outcome_count > 0 then false
        end as is_reached,
        cast(patients.referral_at as date) as referral_date,
    from first_events
    inner join event_summary
        on first_events.contact_attempt_id = event_summary.contact_attempt_id
    left join outcome_summary
        on first_events.contact_attempt_id = outcome_summary.contact_attempt_id
    left join patients
        on first_events.trial_id = patients.trial_id
        and first_events.referral_subject_id = patients.referral_subject_id
),

final as (
    select
        contact_attempt_id,
        patient_key,
        trial_id,
        referral_subject_id,
        site_id,
        row_number() over (
            partition by patient_key
            order by contact_attempt_date, created_at nulls last, first_event_seq
        ) as attempt_number,
        contact_attempt_date,
        created_at,
        date_diff('day', referral_date, contact_attempt_date) as days_since_referral,
        contact_attempt_outcomes,
        outcome_count,
        unmapped_outcomes,
        is_reached,
        event_count,
        event_types,
        first_event_id,
    from joined
)

select * from final
