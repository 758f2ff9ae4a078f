-- One row per contact_attempt_id, however many events (and spellings) carried it: the
-- attempt's facts from its first event, outcomes from all of them, its number per patient.
-- fct_contact_attempts is its exported view.

{{ config(materialized='incremental', unique_key='contact_attempt_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_contact_attempts') }}
-- depends_on: {{ ref('int_delta_patients') }}

with

contact_attempt_events as (
    select * from {{ ref('int_contact_attempt_events') }}
    where has_required_fields
    {% if is_incremental() %}
    and contact_attempt_id in (select contact_attempt_id from {{ ref('int_delta_contact_attempts') }})
    {% endif %}
),

attempt_outcomes as (
    select * from {{ ref('int_contact_attempt_outcomes') }}
    {% if is_incremental() %}
    where contact_attempt_id in (select contact_attempt_id from {{ ref('int_delta_contact_attempts') }})
    {% endif %}
),

patients as (
    select * from {{ ref('int_patients') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

attempt_events as (
    -- One hash aggregate: the facts of the first event (event order) and the deliveries.
    select
        contact_attempt_id,
        arg_min(
            {
                'trial_id': trial_id,
                'referral_subject_id': referral_subject_id,
                'site_id': site_id,
                'contact_attempt_date': contact_attempt_date,
                'created_at': created_at,
                'event_id': event_id,
            },
            event_seq
        ) as first_event,
        count(*) as event_count,
        list_sort(list_distinct(list(event_type))) as event_types,
        min(event_seq) as first_event_seq,
    from contact_attempt_events
    group by contact_attempt_id
),

first_events as (
    select
        contact_attempt_id,
        first_event.trial_id,
        first_event.referral_subject_id,
        first_event.site_id,
        first_event.contact_attempt_date,
        first_event.created_at,
        first_event.event_id,
        event_count,
        event_types,
        first_event_seq,
    from attempt_events
),

outcome_summary as (
    -- Lists in outcome order: sort (order, value) pairs, cheaper than an ordered aggregate.
    select
        contact_attempt_id,
        list_transform(
            list_sort(list({'outcome_order': outcome_order, 'outcome': contact_attempt_outcome})),
            lambda entry: entry.outcome
        ) as contact_attempt_outcomes,
        count(*) as outcome_count,
        count(*) filter (where is_mapped) as mapped_outcome_count,
        bool_or(is_reached) as any_reached,
        list_transform(
            list_sort(
                list({'outcome_order': outcome_order, 'outcome': contact_attempt_outcome})
                    filter (where not is_mapped)
            ),
            lambda entry: entry.outcome
        ) as unmapped_outcomes,
    from attempt_outcomes
    group by contact_attempt_id
),

joined as (
    select
        first_events.contact_attempt_id,
        {{ patient_key('first_events.trial_id', 'first_events.referral_subject_id') }} as patient_key,
        first_events.trial_id,
        first_events.referral_subject_id,
        first_events.site_id,
        first_events.contact_attempt_date,
        first_events.created_at,
        first_events.event_id as first_event_id,
        first_events.event_count,
        first_events.event_types,
        first_events.first_event_seq,
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
