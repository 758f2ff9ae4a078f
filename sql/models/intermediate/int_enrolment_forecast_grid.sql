-- One row per trial × point of the grid over the Gamma(alpha, beta) of the trial's site rates
-- (per day) that carries posterior weight (docs/models.md "Enrolment forecast"). The grid:
-- 24 values of alpha from 0.2 to 100 and 31 of the mean rate alpha / beta around the pooled
-- rate, both evenly spaced in log space; a flat prior on the grid (log alpha, log mean). Each
-- point's weight is its negative-binomial marginal likelihood over the trial's sites
-- (Anisimov & Fedorov 2007), normalized over the points kept (log-likelihood within 9 of the
-- best): integrating over the grid carries the uncertainty of alpha and beta into every
-- interval (Mountain & Sherlock 2022). total_rate_shape and total_rate_rate moment-match a
-- gamma to the posterior of the sum of the site rates at that point (each site's rate is
-- Gamma(alpha + enrolled, beta + exposure)). Doubles are summed as decimal(38, 18), which
-- adds exactly: every build (dbt's, the runner's, any thread count) writes the same bits.

with

sites as (
    select * from {{ ref('int_enrolment_forecast_sites') }}
),

trials as (
    select
        trial_id,
        count(*) as site_count,
        cast(sum(cast(enrolled_to_date as decimal(38, 18))) as double) as enrolled_sum,
        cast(sum(cast(fit_exposure_days as decimal(38, 18))) as double) as exposure_sum,
    from sites
    group by trial_id
),

grid as (
    -- the mean-rate axis spans about 5 posterior standard deviations of its log each way
    select
        trials.trial_id,
        alpha_steps.i as alpha_step,
        mean_steps.j as mean_step,
        exp(ln(0.2) + alpha_steps.i * ln(500.0) / 23) as grid_alpha,
        (trials.enrolled_sum + 0.5) / trials.exposure_sum
            * exp(mean_steps.j * sqrt(1.0 / (trials.enrolled_sum + 1) + 3.0 / trials.site_count) / 3) as grid_mean_rate,
    from trials
    cross join range(24) as alpha_steps(i)
    cross join range(-15, 16) as mean_steps(j)
),

scored as (
    select
        grid.trial_id,
        grid.alpha_step,
        grid.mean_step,
        grid.grid_alpha,
        grid.grid_alpha / grid.grid_mean_rate as grid_beta,
        cast(sum(cast(
            lgamma(grid.grid_alpha + sites.enrolled_to_date) - lgamma(grid.grid_alpha)
            + grid.grid_alpha * ln((grid.grid_alpha / grid.grid_mean_rate) / (grid.grid_alpha / grid.grid_mean_rate + sites.fit_exposure_days))
            + sites.enrolled_to_date * ln(sites.fit_exposure_days / (grid.grid_alpha / grid.grid_mean_rate + sites.fit_exposure_days)) as decimal(38, 18))) as double) as log_likelihood,
        cast(sum(cast((grid.grid_alpha + sites.enrolled_to_date) / (grid.grid_alpha / grid.grid_mean_rate + sites.fit_exposure_days) as decimal(38, 18))) as double) as total_rate_mean,
        cast(sum(cast((grid.grid_alpha + sites.enrolled_to_date) / pow(grid.grid_alpha / grid.grid_mean_rate + sites.fit_exposure_days, 2) as decimal(38, 18))) as double) as total_rate_variance,
    from grid
    inner join sites
        on grid.trial_id = sites.trial_id
    group by grid.trial_id, grid.alpha_step, grid.mean_step, grid.grid_alpha, grid.grid_mean_rate
),

kept as (
    select
        *,
        exp(log_likelihood - max(log_likelihood) over (partition by trial_id)) as relative_likelihood,
    from scored
    qualify log_likelihood >= max(log_likelihood) over (partition by trial_id) - 9
),

kept_sums as (
    select
        trial_id,
        cast(sum(cast(relative_likelihood as decimal(38, 18))) as double) as likelihood_sum,
    from kept
    group by trial_id
),

final as (
    select
        kept.trial_id,
        kept.alpha_step,
        kept.mean_step,
        kept.grid_alpha,
        kept.grid_beta,
        kept.log_likelihood,
        kept.relative_likelihood / kept_sums.likelihood_sum as weight,
        kept.total_rate_mean * kept.total_rate_mean / kept.total_rate_variance as total_rate_shape,
        kept.total_rate_mean / kept.total_rate_variance as total_rate_rate,
    from kept
    inner join kept_sums
        on kept.trial_id = kept_sums.trial_id
)

select * from final
