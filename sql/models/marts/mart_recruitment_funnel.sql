-- One row per trial × site × referral week (ISO week of the referral time in UTC, as the
-- date of its Monday), over patients with a created event. Additive counts only: every
-- rate is published as a numerator and a denominator (sum both, then divide; never average
-- rates). Windowed measures are NULL until the whole cohort has had the window, as of the
-- data's latest domain time (reproducible: never now()).

with

funnel as (
    select * from {{ ref('fct_patient_funnel') }}
    where has_created_event
),

site_names as (
    select * from {{ ref('int_site_names') }}
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
        any_value(as_of_at) as as_of_at,
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
        sum(contact_attempt_count) as contact_attempts,
        quantile_cont(days_to_first_contact_attempt, 0.5) as median_days_to_first_contact_attempt,
        quantile_cont(days_to_first_contact_attempt, 0.9) as p90_days_to_first_contact_attempt,
        count(*) filter (where is_attempted_by_day_0) as attempted_by_day_0,
        count(*) filter (where is_attempted_by_day_1) as attempted_by_day_1,
        count(*) filter (where is_attempted_by_day_2) as attempted_by_day_2,
        count(*) filter (where is_attempted_by_day_3) as attempted_by_day_3,
        count(*) filter (where is_reached) as reached,
        count(*) filter (where is_contact_attempted and is_reached) as attempted_and_reached,
        count(*) filter (where attempts_until_reached is not null) as reached_by_attempt,
        sum(attempts_until_reached) as attempts_until_reached_sum,
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
),

final as (
    select
        md5(json_array(aggregated.trial_id, aggregated.site_id, aggregated.referral_week)::varchar) as funnel_key,
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
