-- One row per trial × site with at least one referral by as_of_at (a referral: a patient with a
-- created event and a referral_at; orphans are no referrals): the site's enrolled count and
-- exposure, the inputs of the Poisson-gamma recruitment model (docs/models.md "Enrolment
-- forecast"). The events carry no activation date: the first referral stands in for it.
-- The fit uses fit_exposure_days: the exposure plus about one mean gap between the site's referrals
-- (the site was active before its first referral), less the trial's mean days from referral
-- to enrolment (a referral of today enrols weeks later), never below half the exposure.
-- A table rebuilt every transform: it depends on as_of_at (docs/incremental.md).

with

patient_funnel as (
    select * from {{ ref('int_patient_funnel') }}
),

data_as_of as (
    select * from {{ ref('int_data_as_of') }}
),

referrals as (
    select
        patient_funnel.trial_id,
        patient_funnel.site_id,
        patient_funnel.referral_at,
        patient_funnel.enrolled_at,
        data_as_of.as_of_at,
    from patient_funnel
    cross join data_as_of
    where patient_funnel.referral_at is not null
        and not patient_funnel.is_orphan
        and patient_funnel.site_id is not null
        and patient_funnel.referral_at <= data_as_of.as_of_at
),

trial_lags as (
    select
        trial_id,
        -- summed as a decimal, which adds exactly: the same bits whatever the order of the rows
        coalesce(cast(sum(cast(date_diff('millisecond', referral_at, enrolled_at) / 86400000.0 as decimal(38, 18))) as double) / count(*), 0) as days_to_enrolled_mean,
    from referrals
    where enrolled_at <= as_of_at
        and enrolled_at >= referral_at
    group by trial_id
),

sites as (
    select
        trial_id,
        site_id,
        min(referral_at) as first_referral_at,
        any_value(as_of_at) as as_of_at,
        count(*) as referral_count,
        count(*) filter (where enrolled_at <= as_of_at) as enrolled_to_date,
    from referrals
    group by trial_id, site_id
),

final as (
    select
        sites.trial_id,
        sites.site_id,
        sites.first_referral_at,
        cast(sites.first_referral_at as date) as activated_on,
        sites.as_of_at,
        sites.referral_count,
        sites.enrolled_to_date,
        date_diff('millisecond', sites.first_referral_at, sites.as_of_at) / 86400000.0 as exposure_days,
        coalesce(trial_lags.days_to_enrolled_mean, 0) as days_to_enrolled_mean,
        -- the site was activated about one mean gap between its referrals before its first
        -- referral (exposure / (referrals + 1): a site with one referral does not double its
        -- exposure); at least half the exposure, and at least an hour
        greatest(
            date_diff('millisecond', sites.first_referral_at, sites.as_of_at) / 86400000.0 * (1 + 1.0 / (sites.referral_count + 1))
                - coalesce(trial_lags.days_to_enrolled_mean, 0),
            date_diff('millisecond', sites.first_referral_at, sites.as_of_at) / 86400000.0 / 2,
            1.0 / 24
        ) as fit_exposure_days,
    from sites
    left join trial_lags
        on sites.trial_id = trial_lags.trial_id
)

select * from final
