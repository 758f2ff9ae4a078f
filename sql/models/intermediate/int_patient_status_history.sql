-- One row per status spell of a patient: consecutive observations of the same status
-- (in domain order, event order as tie-break) collapse into one spell, valid from its first
-- observation until the next spell starts. A backfilled status slots into its place.
-- fct_patient_status_history is its exported view.

{{ config(materialized='incremental', unique_key='patient_key', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

status_events as (
    select * from {{ ref('int_patient_status_events') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

spell_starts as (
    select
        *,
        coalesce(
            patient_status is distinct from lag(patient_status) over (
                partition by patient_key
                order by status_event_number
            ),
            true
        ) as is_spell_start,
    from status_events
),

numbered as (
    select
        *,
        cast(sum(case when is_spell_start then 1 else 0 end) over (
            partition by patient_key
            order by status_event_number
            rows between unbounded preceding and current row
        ) as integer) as spell_number,
    from spell_starts
),

spells as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        spell_number,
        any_value(patient_status) as patient_status,
        any_value(is_mapped) as is_mapped,
        any_value(stage) as stage,
        any_value(stage_rank) as stage_rank,
        any_value(implied_rank) as implied_rank,
        any_value(path_order) as path_order,
        any_value(outcome_category) as outcome_category,
        any_value(is_terminal) as is_terminal,
        any_value(implies_contact) as implies_contact,
        min(status_at) as valid_from,
        arg_min(event_id, status_event_number) as first_event_id,
        arg_min(entity, status_event_number) as first_event_entity,
        count(*) as status_event_count,
        bool_or(is_out_of_order) as is_backfilled,
    from numbered
    group by patient_key, trial_id, referral_subject_id, spell_number
),

with_context as (
    select
        *,
        lead(valid_from) over patient_spells as valid_to,
        max(implied_rank) over (
            patient_spells rows between unbounded preceding and 1 preceding
        ) as high_water_rank_before,
        last_value(path_order ignore nulls) over (
            patient_spells rows between unbounded preceding and 1 preceding
        ) as previous_path_order,
    from spells
    window patient_spells as (partition by patient_key order by spell_number)
),

final as (
    select
        patient_key || '-' || spell_number as status_spell_id,
        patient_key,
        trial_id,
        referral_subject_id,
        spell_number,
        patient_status,
        stage,
        stage_rank,
        implied_rank,
        path_order,
        outcome_category,
        is_terminal,
        is_mapped,
        implies_contact,
        valid_from,
        valid_to,
        valid_to is null as is_current,
        date_diff('millisecond', valid_from, valid_to) / 3600000.0 as spell_hours,
        greatest(coalesce(high_water_rank_before, 0), coalesce(implied_rank, 0)) as high_water_rank,
        -- Regression: a step back along the path from the previous status that has a place on
        -- it (seed path_order; a reinstated failure is one). Unmapped and archive: never, and
        -- they are skipped as "previous".
        coalesce(path_order < previous_path_order, false) as is_regression,
        is_backfilled,
        status_event_count,
        first_event_id,
        first_event_entity,
    from with_context
)

select * from final
