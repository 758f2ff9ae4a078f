-- One row per trial × site × referral week (ISO week of the referral time in UTC, as the
-- date of its Monday), over patients with a created event. Additive counts only: every
-- rate is published as a numerator and a denominator (sum both, then divide; never average
-- rates). Windowed measures are NULL until the whole cohort has had the window, as of the
-- data's latest domain time (reproducible: never now()).

-- A view (docs/incremental.md "Columns that move with the data"): the stored aggregates of
-- int_recruitment_funnel, masked here by the as-of time of int_data_as_of.

{{ config(materialized='view') }}

with

data_as_of as (
    select * from {{ ref('int_data_as_of') }}
),

aggregated as (
    select
        funnel.*,
        data_as_of.as_of_at,
    from {{ ref('int_recruitment_funnel') }} as funnel
    cross join data_as_of
),

site_names as (
    select * from {{ ref('int_site_names') }}
),

final as (
    select
        {{ surrogate_key(['aggregated.trial_id', 'aggregated.site_id', 'aggregated.referral_week']) }} as funnel_key,
        aggregated.trial_id,
        aggregated.site_id,
        site_names.site_name,
        site_names.mapped_sponsor_site_id,
        aggregated.referral_week,
        date_diff('day', cast(cohort_end_at as date), cast(as_of_at as date)) as cohort_age_days,
        as_of_at,
        referrals,
        acknowledged,
        reached_pre_screening,
        reached_visit_scheduled,
        reached_screening,
        reached_enrolled,
        pre_screen_failed,
        screen_failed,
        screen_failed_not_enrolled,
        dropped,
        archived,
        current_referred,
        current_pre_screening,
        current_visit_scheduled,
        current_screening,
        current_enrolled,
        current_unmapped,
        open_in_progress,
        -- rate pairs: acknowledgement rate = acknowledged / referrals
        acknowledged as acknowledgement_numerator,
        referrals as acknowledgement_denominator,
        median_hours_to_acknowledgement,
        p90_hours_to_acknowledgement,
        case when cohort_end_at + interval 24 hour <= as_of_at then acknowledged_within_24h end as acknowledged_within_24h,
        case when cohort_end_at + interval 24 hour <= as_of_at then referrals end as acknowledged_within_24h_denominator,
        case when cohort_end_at + interval 48 hour <= as_of_at then acknowledged_within_48h end as acknowledged_within_48h,
        case when cohort_end_at + interval 48 hour <= as_of_at then referrals end as acknowledged_within_48h_denominator,
        case when cohort_end_at + interval 72 hour <= as_of_at then acknowledged_within_72h end as acknowledged_within_72h,
        case when cohort_end_at + interval 72 hour <= as_of_at then referrals end as acknowledged_within_72h_denominator,
        contact_attempted,
        never_attempted,
        contact_attempts,
        median_days_to_first_contact_attempt,
        p90_days_to_first_contact_attempt,
        -- attempted by day N: the cohort's last referral day plus N days must be complete
        case when cast(cohort_end_at as date) + 0 <= cast(as_of_at as date) then attempted_by_day_0 end as attempted_by_day_0,
        case when cast(cohort_end_at as date) + 1 <= cast(as_of_at as date) then attempted_by_day_1 end as attempted_by_day_1,
        case when cast(cohort_end_at as date) + 2 <= cast(as_of_at as date) then attempted_by_day_2 end as attempted_by_day_2,
        case when cast(cohort_end_at as date) + 3 <= cast(as_of_at as date) then attempted_by_day_3 end as attempted_by_day_3,
        case when cast(cohort_end_at as date) + 0 <= cast(as_of_at as date) then referrals end as attempted_by_day_0_denominator,
        case when cast(cohort_end_at as date) + 1 <= cast(as_of_at as date) then referrals end as attempted_by_day_1_denominator,
        case when cast(cohort_end_at as date) + 2 <= cast(as_of_at as date) then referrals end as attempted_by_day_2_denominator,
        case when cast(cohort_end_at as date) + 3 <= cast(as_of_at as date) then referrals end as attempted_by_day_3_denominator,
        -- reach rate = attempted_and_reached / contact_attempted
        reached,
        attempted_and_reached,
        reached_by_attempt,
        attempts_until_reached_sum,
        unreachable_after_3_attempts,
        -- conversions: pre-screen pass = reached_visit_scheduled / reached_pre_screening;
        -- scheduling = reached_visit_scheduled / referrals; referral → screening and → enrolled
        -- over referrals; screen-fail = screen_failed_not_enrolled / (that + reached_enrolled)
        screen_failed_not_enrolled + reached_enrolled as screen_fail_denominator,
        median_days_to_screening,
        median_days_to_enrolled,
        median_days_screening_to_enrolled,
        case when cohort_end_at + interval 30 day <= as_of_at then screening_within_30d_all end as screening_within_30d,
        case when cohort_end_at + interval 30 day <= as_of_at then referrals end as screening_within_30d_denominator,
        case when cohort_end_at + interval 60 day <= as_of_at then enrolled_within_60d_all end as enrolled_within_60d,
        case when cohort_end_at + interval 60 day <= as_of_at then referrals end as enrolled_within_60d_denominator,
    from aggregated
    left join site_names
        on aggregated.trial_id = site_names.trial_id
        and aggregated.site_id = site_names.site_id
)

select * from final
