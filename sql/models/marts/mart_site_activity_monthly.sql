-- One row per trial × site × calendar month (UTC, as the date of its first day) of
-- recruitment activity: the columns of mart_site_activity, each activity counted in the
-- month of its own domain date (docs/models.md "mart_site_activity"). Counted from the
-- activities themselves, not summed from weeks (an ISO week can straddle two months).
-- Months without activity are rows of zeros up to the month of as_of_at; a later month is a
-- row only with activity (a future-dated event).

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

monthly as (
    select
        trial_id,
        site_id,
        cast(date_trunc('month', activity_date) as date) as activity_month,
        {{ site_activity_sums() }}
    from daily
    group by trial_id, site_id, activity_month
),

site_spans as (
    select
        trial_id,
        site_id,
        min(activity_month) as first_month,
    from monthly
    group by trial_id, site_id
),

spine as (
    -- Every month from the site's first active month to the month of as_of_at (none when
    -- that is later), then the months with activity after it: a future-dated event (a
    -- mistyped 2062) is one sparse row of its own month, not a zero row for every month
    -- up to it. dq_future_dated_events lists such events.
    select
        site_spans.trial_id,
        site_spans.site_id,
        cast(unnest(generate_series(
            cast(site_spans.first_month as timestamp),
            cast(date_trunc('month', data_as_of.as_of_at) as timestamp),
            interval 1 month
        )) as date) as activity_month,
    from site_spans
    cross join data_as_of
    union
    select trial_id, site_id, activity_month
    from monthly
),

final as (
    select
        {{ surrogate_key(['spine.trial_id', 'spine.site_id', 'spine.activity_month']) }} as site_activity_month_key,
        spine.trial_id,
        spine.site_id,
        site_names.site_name,
        site_names.mapped_sponsor_site_id,
        spine.activity_month,
        cast(spine.activity_month + interval 1 month as date) - 1 as activity_month_end,
        coalesce(monthly.referrals_received, 0) as referrals_received,
        coalesce(monthly.referrals_acknowledged, 0) as referrals_acknowledged,
        coalesce(monthly.first_contact_attempts, 0) as first_contact_attempts,
        coalesce(monthly.contact_attempts, 0) as contact_attempts,
        coalesce(monthly.patients_reached, 0) as patients_reached,
        coalesce(monthly.pre_screenings, 0) as pre_screenings,
        coalesce(monthly.visits_scheduled, 0) as visits_scheduled,
        coalesce(monthly.screenings, 0) as screenings,
        coalesce(monthly.enrolments, 0) as enrolments,
        coalesce(monthly.pre_screen_failures, 0) as pre_screen_failures,
        coalesce(monthly.screen_failures, 0) as screen_failures,
        -- a month not over as of the data holds part of its activity only
        spine.activity_month + interval 1 month <= data_as_of.as_of_at as is_complete_month,
        data_as_of.as_of_at,
    from spine
    cross join data_as_of
    left join monthly
        on spine.trial_id = monthly.trial_id
        and spine.site_id is not distinct from monthly.site_id
        and spine.activity_month = monthly.activity_month
    left join site_names
        on spine.trial_id = site_names.trial_id
        and spine.site_id = site_names.site_id
)

select * from final
