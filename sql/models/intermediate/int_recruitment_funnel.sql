-- The stored aggregates of mart_recruitment_funnel (docs/incremental.md): one row per trial ×
-- site × referral week with every count, before the windowed measures are masked by the
-- data's as-of time (the mart_recruitment_funnel view does that). Replaced by trial: a
-- patient's site and referral week may move with a late created event, and every group of a
-- trial is recomputed from the stored patient facts when one of its patients changed.

{{ config(materialized='incremental', unique_key='trial_id', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

funnel as (
    select * from {{ ref('int_patient_funnel') }}
    where has_created_event
    {% if is_incremental() %}
        and trial_id in (select trial_id from {{ ref('int_delta_patients') }})
    {% endif %}
),

patient_flags as (
    select
        *,
        -- the cohort's last referral instant is the end of its week
        cast(referral_week as timestamp) + interval 7 day as cohort_end_at,
        coalesce(hours_to_acknowledgement <= 24, false) as is_acknowledged_within_24h,
        coalesce(hours_to_acknowledgement <= 48, false) as is_acknowledged_within_48h,
        coalesce(hours_to_acknowledgement <= 72, false) as is_acknowledged_within_72h,
        coalesce(days_to_first_contact_attempt <= 0, false) as is_attempted_by_day_0,
        coalesce(days_to_first_contact_attempt <= 1, false) as is_attempted_by_day_1,
        coalesce(days_to_first_contact_attempt <= 2, false) as is_attempted_by_day_2,
        coalesce(days_to_first_contact_attempt <= 3, false) as is_attempted_by_day_3,
        coalesce(days_to_screening <= 30, false) as is_screening_within_30d,
        coalesce(days_to_enrolled <= 60, false) as is_enrolled_within_60d,
        -- screen-fail rate counts failures that did not end enrolled (reinstated ones did)
        ever_screen_failed and not reached_enrolled as is_screen_failed_not_enrolled,
    from funnel
),

aggregated as (
    select
        trial_id,
        site_id,
        referral_week,
        any_value(cohort_end_at) as cohort_end_at,
        -- volume and stages ever reached
        count(*) as referrals,
        count(*) filter (where is_acknowledged) as acknowledged,
        count(*) filter (where reached_pre_screening) as reached_pre_screening,
        count(*) filter (where reached_visit_scheduled) as reached_visit_scheduled,
        count(*) filter (where reached_screening) as reached_screening,
        count(*) filter (where reached_enrolled) as reached_enrolled,
        -- off-path outcomes (ever)
        count(*) filter (where ever_pre_screen_failed) as pre_screen_failed,
        count(*) filter (where ever_screen_failed) as screen_failed,
        count(*) filter (where is_screen_failed_not_enrolled) as screen_failed_not_enrolled,
        count(*) filter (where ever_dropped) as dropped,
        count(*) filter (where ever_archived) as archived,
        -- current pipeline
        count(*) filter (where current_stage = 'referred') as current_referred,
        count(*) filter (where current_stage = 'pre_screening') as current_pre_screening,
        count(*) filter (where current_stage = 'visit_scheduled') as current_visit_scheduled,
        count(*) filter (where current_stage = 'screening') as current_screening,
        count(*) filter (where current_stage = 'enrolled') as current_enrolled,
        count(*) filter (where current_stage = 'unmapped') as current_unmapped,
        count(*) filter (where final_disposition = 'in_progress') as open_in_progress,
        -- acknowledgement times
        quantile_cont(hours_to_acknowledgement, 0.5) as median_hours_to_acknowledgement,
        quantile_cont(hours_to_acknowledgement, 0.9) as p90_hours_to_acknowledgement,
        count(*) filter (where is_acknowledged_within_24h) as acknowledged_within_24h,
        count(*) filter (where is_acknowledged_within_48h) as acknowledged_within_48h,
        count(*) filter (where is_acknowledged_within_72h) as acknowledged_within_72h,
        -- contact attempts
        count(*) filter (where is_contact_attempted) as contact_attempted,
        count(*) filter (where not is_contact_attempted) as never_attempted,
        -- a sum of integers is a HUGEINT in DuckDB (a DOUBLE in Parquet: 3.0 in BI tools): a count stays a BIGINT
        cast(sum(contact_attempt_count) as bigint) as contact_attempts,
        quantile_cont(days_to_first_contact_attempt, 0.5) as median_days_to_first_contact_attempt,
        quantile_cont(days_to_first_contact_attempt, 0.9) as p90_days_to_first_contact_attempt,
        count(*) filter (where is_attempted_by_day_0) as attempted_by_day_0,
        count(*) filter (where is_attempted_by_day_1) as attempted_by_day_1,
        count(*) filter (where is_attempted_by_day_2) as attempted_by_day_2,
        count(*) filter (where is_attempted_by_day_3) as attempted_by_day_3,
        count(*) filter (where is_reached) as reached,
        count(*) filter (where is_contact_attempted and is_reached) as attempted_and_reached,
        count(*) filter (where attempts_until_reached is not null) as reached_by_attempt,
        cast(sum(attempts_until_reached) as bigint) as attempts_until_reached_sum,
        count(*) filter (where is_unreachable_after_3_attempts) as unreachable_after_3_attempts,
        -- cycle times
        quantile_cont(days_to_screening, 0.5) as median_days_to_screening,
        quantile_cont(days_to_enrolled, 0.5) as median_days_to_enrolled,
        quantile_cont(days_screening_to_enrolled, 0.5) as median_days_screening_to_enrolled,
        -- windowed conversions (masked below for immature cohorts)
        count(*) filter (where is_screening_within_30d) as screening_within_30d_all,
        count(*) filter (where is_enrolled_within_60d) as enrolled_within_60d_all,
    from patient_flags
    group by trial_id, site_id, referral_week
)

select * from aggregated
