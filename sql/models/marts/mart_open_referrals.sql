-- One row per referral still open as of the data (as_of_at): a patient with a created event
-- whose recruitment outcome is still in progress (docs/models.md "mart_open_referrals"): the
-- site coordinators' worklist, with the referral's age, whether it was acknowledged, the
-- contact attempts so far and the current status. worklist_rank orders each trial × site's
-- list oldest referral first (tables have no order: sort by it).
-- A view (docs/incremental.md "Columns that move with the data"): its rows age with the
-- data's as-of time every night, and as a table all of them were written again each night.

{{ config(materialized='view') }}

with

funnel as (
    select * from {{ ref('fct_patient_funnel') }}
    where has_created_event
),

contact_attempts as (
    select * from {{ ref('fct_contact_attempts') }}
),

site_names as (
    select * from {{ ref('int_site_names') }}
),

last_attempts as (
    select
        patient_key,
        arg_max(
            {'contact_attempt_date': contact_attempt_date, 'created_at': created_at},
            attempt_number
        ) as last_attempt,
    from contact_attempts
    group by patient_key
),

open_referrals as (
    -- Open: the latest mapped status's outcome category is in_progress (seed
    -- seed_patient_status_stages), or no status is known (none sent, or only unmapped values:
    -- kept on the list for a person to look at). Enrolled, completed, failed, dropped and
    -- archived patients are off it.
    select *
    from funnel
    where final_disposition is null
        or final_disposition in ('in_progress', 'unmapped')
),

final as (
    select
        open_referrals.patient_key,
        open_referrals.trial_id,
        open_referrals.site_id,
        site_names.site_name,
        site_names.mapped_sponsor_site_id,
        open_referrals.referral_subject_id,
        row_number() over (
            partition by open_referrals.trial_id, open_referrals.site_id
            order by open_referrals.referral_at, open_referrals.referral_subject_id
        ) as worklist_rank,
        -- what the site has not done yet, in the order it is usually done
        case
            when not open_referrals.is_acknowledged then 'acknowledge'
            when open_referrals.contact_attempt_count = 0 then 'first_contact'
            when open_referrals.is_reached is not true then 'reach'
            else 'progress'
        end as worklist_step,
        open_referrals.referral_at as referred_at,
        open_referrals.referral_date,
        date_diff('day', open_referrals.referral_date, cast(open_referrals.as_of_at as date)) as age_days,
        open_referrals.is_acknowledged,
        open_referrals.acknowledged_at,
        open_referrals.hours_to_acknowledgement,
        open_referrals.contact_attempt_count,
        open_referrals.is_contact_attempted,
        open_referrals.first_contact_attempt_date,
        last_attempts.last_attempt.contact_attempt_date as last_contact_attempt_date,
        -- attempts carry a date only: the last attempt's createdTime (when it was logged)
        last_attempts.last_attempt.created_at as last_contact_attempt_at,
        date_diff('day', last_attempts.last_attempt.contact_attempt_date, cast(open_referrals.as_of_at as date))
            as days_since_last_attempt,
        open_referrals.is_reached,
        open_referrals.is_unreachable_after_3_attempts,
        open_referrals.current_status,
        open_referrals.current_stage,
        open_referrals.current_status_since,
        open_referrals.days_in_current_status,
        open_referrals.final_disposition,
        open_referrals.as_of_at,
    from open_referrals
    left join last_attempts
        on open_referrals.patient_key = last_attempts.patient_key
    left join site_names
        on open_referrals.trial_id = site_names.trial_id
        and open_referrals.site_id = site_names.site_id
)

select * from final
