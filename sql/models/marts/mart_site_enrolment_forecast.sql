-- One row per trial × site with at least one referral by as_of_at (docs/models.md
-- "mart_site_enrolment_forecast"): the site's enrolled count, exposure since its first
-- referral (the events carry no activation date), the posterior interval of its enrolment
-- rate under the trial's Poisson-gamma model, its median enrolments of the next 91 days, and
-- where it stands among the trial's sites. A table rebuilt every transform (docs/incremental.md).

with

sites as (
    select * from {{ ref('int_enrolment_forecast_sites') }}
),

grid as (
    select * from {{ ref('int_enrolment_forecast_grid') }}
),

site_names as (
    select * from {{ ref('int_site_names') }}
),

posterior_moments as (
    -- the site's rate per day is Gamma(alpha + enrolled, beta + exposure) at each grid point;
    -- over the grid, a mixture: its mean and variance (summed as decimals: the same bits in every build)
    select
        sites.trial_id,
        sites.site_id,
        cast(sum(cast(grid.weight * (grid.grid_alpha + sites.enrolled_to_date) / (grid.grid_beta + sites.fit_exposure_days) as decimal(38, 18))) as double) as rate_mean,
        cast(sum(cast(grid.weight * (grid.grid_alpha + sites.enrolled_to_date) * (grid.grid_alpha + sites.enrolled_to_date + 1)
            / pow(grid.grid_beta + sites.fit_exposure_days, 2) as decimal(38, 18))) as double) as rate_second_moment,
        cast(sum(cast(grid.weight * grid.grid_alpha / grid.grid_beta as decimal(38, 18))) as double) as trial_rate_mean,
    from sites
    inner join grid
        on sites.trial_id = grid.trial_id
    group by sites.trial_id, sites.site_id
),

matched as (
    -- a gamma with the mixture's mean and variance: shape and rate (per day)
    select
        trial_id,
        site_id,
        rate_mean,
        trial_rate_mean,
        rate_mean * rate_mean / (rate_second_moment - rate_mean * rate_mean) as rate_shape,
        rate_mean / (rate_second_moment - rate_mean * rate_mean) as rate_rate,
    from posterior_moments
),

rate_percentiles as (
    -- Wilson-Hilferty: a gamma's q-quantile is (shape / rate) (1 - 1/(9 shape) + z_q / (3 sqrt(shape)))^3
    select
        *,
        30 * rate_shape / rate_rate * pow(greatest(1 - 1 / (9 * rate_shape) - 1.2815515655 / (3 * sqrt(rate_shape)), 0), 3) as rate_p10,
        30 * rate_shape / rate_rate * pow(greatest(1 - 1 / (9 * rate_shape), 0), 3) as rate_p50,
        30 * rate_shape / rate_rate * pow(1 - 1 / (9 * rate_shape) + 1.2815515655 / (3 * sqrt(rate_shape)), 3) as rate_p90,
    from matched
),

next_91d as (
    -- enrolments of the next 91 days: negative binomial (shape, rate / (rate + 91)); the median
    -- is the smallest count whose cumulative probability reaches 0.5
    select
        trial_id,
        site_id,
        min(n) as enrolments_next_91d_p50,
    from (
        select
            rate_percentiles.trial_id,
            rate_percentiles.site_id,
            counts.n,
            cast(sum(cast(exp(
                lgamma(rate_shape + counts.n) - lgamma(rate_shape) - lgamma(counts.n + 1)
                + rate_shape * ln(rate_rate / (rate_rate + 91)) + counts.n * ln(91 / (rate_rate + 91))
            ) as decimal(38, 18))) over (partition by rate_percentiles.trial_id, rate_percentiles.site_id order by counts.n) as double) as cumulative_probability,
        from rate_percentiles
        cross join lateral (
            select unnest(range(0, cast(ceil(91 * rate_mean * 2 + 10) as bigint))) as n
        ) as counts
    )
    where cumulative_probability >= 0.5
    group by trial_id, site_id
),

final as (
    select
        sites.trial_id,
        sites.site_id,
        site_names.site_name,
        sites.activated_on,
        sites.first_referral_at,
        sites.exposure_days,
        sites.fit_exposure_days,
        sites.referral_count,
        cast(sites.enrolled_to_date as bigint) as enrolled_to_date,
        rate_percentiles.rate_p10 as enrolment_rate_per_30d_p10,
        rate_percentiles.rate_p50 as enrolment_rate_per_30d_p50,
        rate_percentiles.rate_p90 as enrolment_rate_per_30d_p90,
        30 * rate_percentiles.rate_mean as enrolment_rate_per_30d_mean,
        30 * rate_percentiles.trial_rate_mean as trial_site_rate_per_30d_mean,
        cast(coalesce(next_91d.enrolments_next_91d_p50, 0) as bigint) as enrolments_next_91d_p50,
        -- the site is surely slower than the trial's typical site: its rate's 90th percentile is below the mean
        rate_percentiles.rate_p90 < 30 * rate_percentiles.trial_rate_mean as is_rate_below_trial,
        cast(row_number() over (
            partition by sites.trial_id order by rate_percentiles.rate_p50, sites.site_id
        ) as bigint) as rate_rank_in_trial,
        sites.as_of_at,
    from sites
    inner join rate_percentiles
        on sites.trial_id = rate_percentiles.trial_id
        and sites.site_id = rate_percentiles.site_id
    left join next_91d
        on sites.trial_id = next_91d.trial_id
        and sites.site_id = next_91d.site_id
    left join site_names
        on sites.trial_id = site_names.trial_id
        and sites.site_id = site_names.site_id
)

select * from final
