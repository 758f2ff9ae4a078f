-- The stored facts of fct_patient_funnel (docs/incremental.md): one row per patient, every
-- column of fct_patient_funnel except those that move with the data's as-of time (as_of_at,
-- days_in_current_status), which the fct_patient_funnel view adds. Durations are measured
-- against the data, never against now().

{{ config(materialized='incremental', unique_key='patient_key', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

patients as (
    select * from {{ ref('int_patients') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

status_history as (
    select * from {{ ref('int_patient_status_history') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
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

contact_attempts as (
    select * from {{ ref('int_contact_attempts') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

acknowledgements as (
    select
        trial_id,
        referral_subject_id,
        min(referral_acknowledged_at) as acknowledged_at,
        count(*) as acknowledgement_event_count,
    from referral_acknowledgements
    group by trial_id, referral_subject_id
),

stage_milestones as (
    select
        patient_key,
        max(implied_rank) as high_water_rank,
        min(valid_from) filter (where implied_rank >= 2) as pre_screening_at,
        min(valid_from) filter (where implied_rank >= 3) as visit_scheduled_at,
        min(valid_from) filter (where implied_rank >= 4) as screening_at,
        min(valid_from) filter (where implied_rank >= 5) as enrolled_at,
        bool_or(stage = 'pre_screen_failed') as ever_pre_screen_failed,
        bool_or(stage = 'screen_failed') as ever_screen_failed,
        bool_or(stage = 'dropped') as ever_dropped,
        bool_or(stage = 'archived') as ever_archived,
        bool_or(not is_mapped) as has_unmapped_status,
        bool_or(is_regression) as has_regression,
        bool_or(is_backfilled) as has_backfilled_status,
        bool_or(implies_contact) as has_contact_implying_status,
        min(valid_from) filter (where implies_contact) as contact_implied_at,
        count(*) as status_spell_count,
        arg_max(outcome_category, spell_number) filter (where is_mapped) as final_disposition,
    from status_history
    group by patient_key
),

current_spells as (
    select * from status_history
    where is_current
),

attempt_summary as (
    select
        patient_key,
        count(*) as contact_attempt_count,
        min(contact_attempt_date) as first_contact_attempt_date,
        max(contact_attempt_date) as last_contact_attempt_date,
        min(attempt_number) filter (where is_reached) as attempts_until_reached,
        min(contact_attempt_date) filter (where is_reached) as first_reached_date,
        bool_or(is_reached) filter (where is_reached is not null) as any_attempt_reached,
        count(*) filter (where is_reached = false) as not_reached_attempt_count,
    from contact_attempts
    group by patient_key
),

joined as (
    select
        patients.*,
        acknowledgements.acknowledged_at,
        coalesce(acknowledgements.acknowledgement_event_count, 0) as acknowledgement_event_count,
        stage_milestones.high_water_rank,
        stage_milestones.pre_screening_at,
        stage_milestones.visit_scheduled_at,
        stage_milestones.screening_at,
        stage_milestones.enrolled_at,
        coalesce(stage_milestones.ever_pre_screen_failed, false) as ever_pre_screen_failed,
        coalesce(stage_milestones.ever_screen_failed, false) as ever_screen_failed,
        coalesce(stage_milestones.ever_dropped, false) as ever_dropped,
        coalesce(stage_milestones.ever_archived, false) as ever_archived,
        coalesce(stage_milestones.has_unmapped_status, false) as has_unmapped_status,
        coalesce(stage_milestones.has_regression, false) as has_regression,
        coalesce(stage_milestones.has_backfilled_status, false) as has_backfilled_status,
        coalesce(stage_milestones.has_contact_implying_status, false) as has_contact_implying_status,
        stage_milestones.contact_implied_at,
        coalesce(stage_milestones.status_spell_count, 0) as status_spell_count,
        stage_milestones.final_disposition,
        current_spells.patient_status as current_status,
        current_spells.stage as current_stage,
        current_spells.stage_rank as current_stage_rank,
        current_spells.valid_from as current_status_since,
        coalesce(attempt_summary.contact_attempt_count, 0) as contact_attempt_count,
        attempt_summary.first_contact_attempt_date,
        attempt_summary.last_contact_attempt_date,
        attempt_summary.attempts_until_reached,
        attempt_summary.first_reached_date,
        coalesce(attempt_summary.any_attempt_reached, false) as any_attempt_reached,
        coalesce(attempt_summary.not_reached_attempt_count, 0) as not_reached_attempt_count,
    from patients
    left join acknowledgements
        on patients.trial_id = acknowledgements.trial_id
        and patients.referral_subject_id = acknowledgements.referral_subject_id
    left join stage_milestones
        on patients.patient_key = stage_milestones.patient_key
    left join current_spells
        on patients.patient_key = current_spells.patient_key
    left join attempt_summary
        on patients.patient_key = attempt_summary.patient_key
),

final as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        site_id,
        sponsor_site_id,
        -- referral
        referral_received_at,
        created_at,
        referral_at,
        cast(referral_at as date) as referral_date,
        cast(date_trunc('week', referral_at) as date) as referral_week,
        -- acknowledgement
        acknowledged_at,
        acknowledged_at is not null as is_acknowledged,
        date_diff('millisecond', referral_at, acknowledged_at) / 3600000.0 as hours_to_acknowledgement,
        acknowledgement_event_count,
        -- contact attempts (dates only: durations in days)
        contact_attempt_count,
        contact_attempt_count > 0 as is_contact_attempted,
        first_contact_attempt_date,
        last_contact_attempt_date,
        date_diff('day', cast(referral_at as date), first_contact_attempt_date) as days_to_first_contact_attempt,
        date_diff('day', first_contact_attempt_date, last_contact_attempt_date) as contact_attempt_span_days,
        attempts_until_reached,
        first_reached_date,
        -- the day reach is first known: a reaching attempt's date or the UTC date of the first
        -- status that implies contact, whichever is earlier (null when is_reached is not true)
        least(first_reached_date, cast(contact_implied_at as date)) as reached_date,
        -- Tri-state: true on a reaching outcome or a status that implies contact; false when
        -- some attempt's outcome says not reached; null when nothing is known.
        case
            when any_attempt_reached or has_contact_implying_status then true
            when not_reached_attempt_count > 0 then false
        end as is_reached,
        -- Unreachable (docs/domain.md "Unreachable"): at least 3 attempts whose dates span at
        -- least 14 days (first to last), and nothing says the patient was reached.
        contact_attempt_count >= 3
            and date_diff('day', first_contact_attempt_date, last_contact_attempt_date) >= 14
            and not (any_attempt_reached or has_contact_implying_status) as is_unreachable_after_3_attempts,
        -- stages ever reached (high-water mark; each implies the ones before it)
        has_created_event or coalesce(high_water_rank >= 1, false) as reached_referred,
        coalesce(high_water_rank >= 2, false) as reached_pre_screening,
        coalesce(high_water_rank >= 3, false) as reached_visit_scheduled,
        coalesce(high_water_rank >= 4, false) as reached_screening,
        coalesce(high_water_rank >= 5, false) as reached_enrolled,
        coalesce(high_water_rank, 0) as high_water_rank,
        pre_screening_at,
        visit_scheduled_at,
        screening_at,
        enrolled_at,
        date_diff('millisecond', referral_at, screening_at) / 86400000.0 as days_to_screening,
        date_diff('millisecond', referral_at, enrolled_at) / 86400000.0 as days_to_enrolled,
        date_diff('millisecond', screening_at, enrolled_at) / 86400000.0 as days_screening_to_enrolled,
        -- off-path outcomes (ever)
        ever_pre_screen_failed,
        ever_screen_failed,
        ever_dropped,
        ever_archived,
        -- current status (pipeline views)
        current_status,
        current_stage,
        current_stage_rank,
        current_status_since,
        coalesce(final_disposition, case when status_spell_count > 0 then 'unmapped' end) as final_disposition,
        status_spell_count,
        -- flags
        has_created_event,
        not has_created_event as is_orphan,
        created_event_count,
        created_event_types,
        is_multi_site,
        site_count,
        site_ids,
        is_site_from_created_event,
        has_regression,
        has_unmapped_status,
        has_late_events or has_backfilled_status as has_backfilled_events,
        event_count,
        first_event_at,
        last_event_at,
    from joined
)

select * from final
