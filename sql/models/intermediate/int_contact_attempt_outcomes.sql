-- One row per contact attempt × outcome value (distinct), across every event of the attempt,
-- mapped through seed_contact_outcomes (unknown values: is_mapped false, is_reached null).
-- fct_contact_attempt_outcomes is its exported view.

{{ config(materialized='incremental', unique_key='contact_attempt_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_contact_attempts') }}

with

contact_attempt_events as (
    select * from {{ ref('int_contact_attempt_events') }}
    where has_required_fields
    {% if is_incremental() %}
    and contact_attempt_id in (select contact_attempt_id from {{ ref('int_delta_contact_attempts') }})
    {% endif %}
),

contact_outcomes as (
    select * from {{ ref('seed_contact_outcomes') }}
),

attempt_owners as (
    -- The attempt's patient, from its first event (event order).
    select
        contact_attempt_id,
        arg_min(
            {'trial_id': trial_id, 'referral_subject_id': referral_subject_id},
            event_seq
        ) as owner,
    from contact_attempt_events
    group by contact_attempt_id
),

unnested as (
    select
        contact_attempt_id,
        event_seq,
        unnest(contact_attempt_outcomes) as contact_attempt_outcome,
        unnest(generate_series(1, len(contact_attempt_outcomes))) as outcome_position,
    from contact_attempt_events
),

distinct_outcomes as (
    -- First appearance of each value: the lowest (event order, position in the event).
    select
        contact_attempt_id,
        contact_attempt_outcome,
        min((event_seq, outcome_position)) as first_occurrence,
        count(*) as occurrence_count,
    from unnested
    group by contact_attempt_id, contact_attempt_outcome
),

final as (
    select
        {{ surrogate_key(['distinct_outcomes.contact_attempt_id', 'distinct_outcomes.contact_attempt_outcome']) }}
            as contact_attempt_outcome_id,
        distinct_outcomes.contact_attempt_id,
        {{ patient_key('attempt_owners.owner.trial_id', 'attempt_owners.owner.referral_subject_id') }}
            as patient_key,
        attempt_owners.owner.trial_id,
        attempt_owners.owner.referral_subject_id,
        distinct_outcomes.contact_attempt_outcome,
        row_number() over (
            partition by distinct_outcomes.contact_attempt_id
            order by distinct_outcomes.first_occurrence
        ) as outcome_order,
        contact_outcomes.contact_attempt_outcome is not null as is_mapped,
        coalesce(contact_outcomes.outcome_group, 'unmapped') as outcome_group,
        contact_outcomes.is_reached,
        distinct_outcomes.occurrence_count,
    from distinct_outcomes
    inner join attempt_owners
        on distinct_outcomes.contact_attempt_id = attempt_owners.contact_attempt_id
    left join contact_outcomes
        on distinct_outcomes.contact_attempt_outcome = contact_outcomes.contact_attempt_outcome
)

select * from final
