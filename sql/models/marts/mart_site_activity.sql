-- One row per trial × site × ISO week (UTC, as the date of its Monday) of recruitment
-- activity, each activity counted in the week of its own domain date, not of the referral
-- (docs/models.md "mart_site_activity"): referrals received, acknowledged, first contact
-- attempts, patients reached, stages first reached, enrolments and failures. Weeks without
-- activity are rows of zeros from the site's first active week to the week of as_of_at, so
-- "which sites enrolled nobody in the last 4 weeks" is a sum over rows; a later week is a
-- row only with activity (a future-dated event). Counts are additive:
-- sum them over weeks, sites or trials. The monthly rollup is mart_site_activity_monthly.

with

daily as (
    select * from {{ ref('int_site_activity_daily') }}
),

site_names as (
    select * from {{ ref('int_site_names') }}
),

data_as_of as (
    select * from {{ ref('int_data_as_of') }}
),

weekly as (
    select
        trial_id,
        site_id,
        cast(date_trunc('week', activity_date) as date) as activity_week,
        {{ site_activity_sums() }}
    from daily
    group by trial_id, site_id, activity_week
),

site_spans as (
    select
        trial_id,
        site_id,
        min(activity_week) as first_week,
    from weekly
    group by trial_id, site_id
),

spine as (
    -- Every week from the site's first active week to the week of as_of_at (none when
    -- that is later), then the weeks with activity after it: a future-dated event (a
    -- mistyped 2062) is one sparse row of its own week, not a zero row for every week
    -- up to it. dq_future_dated_events lists such events.
    select
        site_spans.trial_id,
        site_spans.site_id,
        cast(unnest(generate_series(
            cast(site_spans.first_week as timestamp),
            cast(date_trunc('week', data_as_of.as_of_at) as timestamp),
            interval 7 day
        )) as date) as activity_week,
    from site_spans
    cross join data_as_of
    union
    select trial_id, site_id, activity_week
    from weekly
),

final as (
    select
        {{ surrogate_key(['spine.trial_id', 'spine.site_id', 'spine.activity_week']) }} as site_activity_key,
        spine.trial_id,
        spine.site_id,
        site_names.site_name,
        site_names.mapped_sponsor_site_id,
        spine.activity_week,
        spine.activity_week + 6 as activity_week_end,
        coalesce(weekly.referrals_received, 0) as referrals_received,
        coalesce(weekly.referrals_acknowledged, 0) as referrals_acknowledged,
        coalesce(weekly.first_contact_attempts, 0) as first_contact_attempts,
        coalesce(weekly.contact_attempts, 0) as contact_attempts,
        coalesce(weekly.patients_reached, 0) as patients_reached,
        coalesce(weekly.pre_screenings, 0) as pre_screenings,
        coalesce(weekly.visits_scheduled, 0) as visits_scheduled,
        coalesce(weekly.screenings, 0) as screenings,
        coalesce(weekly.enrolments, 0) as enrolments,
        coalesce(weekly.pre_screen_failures, 0) as pre_screen_failures,
        coalesce(weekly.screen_failures, 0) as screen_failures,
        -- a week not over as of the data holds part of its activity only
        cast(spine.activity_week + 7 as timestamp) <= data_as_of.as_of_at as is_complete_week,
        data_as_of.as_of_at,
    from spine
    cross join data_as_of
    left join weekly
        on spine.trial_id = weekly.trial_id
        and spine.site_id is not distinct from weekly.site_id
        and spine.activity_week = weekly.activity_week
    left join site_names
        on spine.trial_id = site_names.trial_id
        and spine.site_id = site_names.site_id
)

select * from final
