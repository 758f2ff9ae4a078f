-- One row per trial with at least one referral by as_of_at (docs/models.md
-- "mart_enrolment_forecast"): enrolled to date, the predictive percentiles of the enrolments of
-- the next 91 days at the sites active today, and with an operator's target
-- (seed_trial_targets) the percentiles of the date it is reached and the probability of
-- reaching it by the target date. Poisson-gamma recruitment model (Anisimov & Fedorov 2007)
-- integrated over the grid of int_enrolment_forecast_grid (parameter uncertainty, Mountain &
-- Sherlock 2022). A table rebuilt every transform (docs/incremental.md). Doubles are summed
-- as decimal(38, 18), which adds exactly: every build writes the same bits.

with

patient_funnel as (
    select * from {{ ref('int_patient_funnel') }}
),

data_as_of as (
    select * from {{ ref('int_data_as_of') }}
),

sites as (
    select * from {{ ref('int_enrolment_forecast_sites') }}
),

grid as (
    select * from {{ ref('int_enrolment_forecast_grid') }}
),

targets as (
    select * from {{ ref('seed_trial_targets') }}
    where trial_id is not null
),

trials as (
    select
        trial_id,
        count(*) as site_count,
    from sites
    group by trial_id
),

enrolled as (
    select
        patient_funnel.trial_id,
        count(*) filter (where patient_funnel.enrolled_at <= data_as_of.as_of_at) as enrolled_to_date,
    from patient_funnel
    cross join data_as_of
    group by patient_funnel.trial_id
),

total_rate as (
    -- the posterior of the trial's total rate (per day): a mixture over the grid of gammas
    select
        trial_id,
        cast(sum(cast(weight * total_rate_shape / total_rate_rate as decimal(38, 18))) as double) as rate_mean,
        cast(sum(cast(weight * (total_rate_shape / pow(total_rate_rate, 2) + pow(total_rate_shape / total_rate_rate, 2)) as decimal(38, 18))) as double) as rate_second_moment,
        cast(sum(cast(weight * grid_alpha as decimal(38, 18))) as double) as alpha_mean,
        cast(sum(cast(weight * grid_alpha / grid_beta as decimal(38, 18))) as double) as site_rate_mean,
        count(*) as grid_points,
    from grid
    group by trial_id
),

next_91d_probabilities as (
    -- N(91 days) at a grid point is negative binomial (shape, rate / (rate + 91)); over the grid, a mixture
    select
        grid.trial_id,
        counts.n,
        cast(sum(cast(grid.weight * exp(
            lgamma(grid.total_rate_shape + counts.n) - lgamma(grid.total_rate_shape) - lgamma(counts.n + 1)
            + grid.total_rate_shape * ln(grid.total_rate_rate / (grid.total_rate_rate + 91))
            + counts.n * ln(91 / (grid.total_rate_rate + 91))
        ) as decimal(38, 18))) as double) as probability,
    from grid
    inner join total_rate
        on grid.trial_id = total_rate.trial_id
    cross join lateral (
        -- counts within 8 standard deviations below the mean and 10 above (plus 10): the mass
        -- outside is negligible, and a large trial sums a few thousand counts, not all from 0
        select unnest(range(
            cast(greatest(floor(
                91 * total_rate.rate_mean
                - 8 * sqrt(91 * total_rate.rate_mean + 91 * 91 * (total_rate.rate_second_moment - total_rate.rate_mean * total_rate.rate_mean))
            ), 0) as bigint),
            cast(ceil(
                91 * total_rate.rate_mean
                + 10 * sqrt(91 * total_rate.rate_mean + 91 * 91 * (total_rate.rate_second_moment - total_rate.rate_mean * total_rate.rate_mean))
                + 10
            ) as bigint)
        )) as n
    ) as counts
    group by grid.trial_id, counts.n
),

next_91d as (
    -- the q-percentile: the smallest count whose cumulative probability reaches q (the counts
    -- below the range carry no mass worth a percentile)
    select
        trial_id,
        min(n) filter (where cumulative_probability >= 0.1 - 1e-9) as p10,
        min(n) filter (where cumulative_probability >= 0.5 - 1e-9) as p50,
        min(n) filter (where cumulative_probability >= 0.9 - 1e-9) as p90,
    from (
        select
            trial_id,
            n,
            cast(sum(cast(probability as decimal(38, 18))) over (partition by trial_id order by n) as double) as cumulative_probability,
        from next_91d_probabilities
    )
    group by trial_id
),

remaining as (
    select
        trials.trial_id,
        cast(targets.enrolment_target as bigint) as enrolment_target,
        targets.target_date,
        cast(targets.enrolment_target - coalesce(enrolled.enrolled_to_date, 0) as bigint) as remaining,
    from trials
    inner join targets
        on trials.trial_id = targets.trial_id
    left join enrolled
        on trials.trial_id = enrolled.trial_id
    where targets.enrolment_target is not null
),

rate_nodes as (
    -- quadrature of the total rate's mixture: 80 rates evenly spaced in log around its mean,
    -- each weighted by the mixture's density there (times the rate: the measure of log rate)
    select
        total_rate.trial_id,
        nodes.j,
        total_rate.rate_mean * exp(
            sqrt(ln(1 + (total_rate.rate_second_moment - pow(total_rate.rate_mean, 2)) / pow(total_rate.rate_mean, 2)))
            * (-7 + 11 * nodes.j / 79.0)
        ) as rate,
    from total_rate
    cross join range(80) as nodes(j)
    where total_rate.trial_id in (select trial_id from remaining where remaining > 0)
),

rate_weights as (
    select
        rate_nodes.trial_id,
        rate_nodes.j,
        rate_nodes.rate,
        cast(sum(cast(grid.weight * exp(
            grid.total_rate_shape * ln(grid.total_rate_rate * rate_nodes.rate)
            - grid.total_rate_rate * rate_nodes.rate - lgamma(grid.total_rate_shape)
        ) as decimal(38, 18))) as double) as density,
    from rate_nodes
    inner join grid
        on rate_nodes.trial_id = grid.trial_id
    group by rate_nodes.trial_id, rate_nodes.j, rate_nodes.rate
),

work_nodes as (
    -- quadrature of Gamma(remaining, 1): given the total rate, the time to the remaining-th
    -- enrolment is Gamma(remaining, rate), i.e. this divided by the rate
    select
        remaining.trial_id,
        nodes.i,
        exp(ln(remaining.remaining) + (-9 + 14 * nodes.i / 99.0) / sqrt(remaining.remaining)) as work,
        exp(
            remaining.remaining * (ln(remaining.remaining) + (-9 + 14 * nodes.i / 99.0) / sqrt(remaining.remaining))
            - exp(ln(remaining.remaining) + (-9 + 14 * nodes.i / 99.0) / sqrt(remaining.remaining))
            - lgamma(remaining.remaining)
        ) as density,
    from remaining
    cross join range(100) as nodes(i)
    where remaining.remaining > 0
),

reach_nodes as (
    select
        work_nodes.trial_id,
        work_nodes.i,
        rate_weights.j,
        work_nodes.work / rate_weights.rate as days,
        work_nodes.density * rate_weights.density as density,
    from work_nodes
    inner join rate_weights
        on work_nodes.trial_id = rate_weights.trial_id
),

reach_totals as (
    select
        trial_id,
        cast(sum(cast(density as decimal(38, 18))) as double) as density_sum,
    from reach_nodes
    group by trial_id
),

reach_times as (
    select
        reach_nodes.trial_id,
        reach_nodes.i,
        reach_nodes.j,
        reach_nodes.days,
        reach_nodes.density / reach_totals.density_sum as probability,
    from reach_nodes
    inner join reach_totals
        on reach_nodes.trial_id = reach_totals.trial_id
),

reach_cumulative as (
    select
        trial_id,
        days,
        cast(sum(cast(probability as decimal(38, 18))) over (partition by trial_id order by days, i, j rows unbounded preceding) as double) as cumulative_probability,
    from reach_times
),

reach as (
    select
        reach_cumulative.trial_id,
        min(reach_cumulative.days) filter (where reach_cumulative.cumulative_probability >= 0.1) as days_p10,
        min(reach_cumulative.days) filter (where reach_cumulative.cumulative_probability >= 0.5) as days_p50,
        min(reach_cumulative.days) filter (where reach_cumulative.cumulative_probability >= 0.9) as days_p90,
    from reach_cumulative
    group by reach_cumulative.trial_id
),

reach_by_target_date as (
    -- P(reached on or before target_date): the time runs to the end of that UTC day
    select
        reach_times.trial_id,
        cast(sum(cast(reach_times.probability as decimal(38, 18))) filter (
            where reach_times.days <= date_diff('millisecond', data_as_of.as_of_at, cast(remaining.target_date + 1 as timestamp)) / 86400000.0
        ) as double) as probability,
    from reach_times
    inner join remaining
        on reach_times.trial_id = remaining.trial_id
    cross join data_as_of
    group by reach_times.trial_id
),

final as (
    select
        trials.trial_id,
        data_as_of.as_of_at,
        cast(coalesce(enrolled.enrolled_to_date, 0) as bigint) as enrolled_to_date,
        cast(trials.site_count as bigint) as site_count,
        cast(next_91d.p10 as bigint) as enrolments_next_91d_p10,
        cast(next_91d.p50 as bigint) as enrolments_next_91d_p50,
        cast(next_91d.p90 as bigint) as enrolments_next_91d_p90,
        91 * total_rate.rate_mean as enrolments_next_91d_mean,
        remaining.enrolment_target,
        remaining.target_date,
        case
            when remaining.remaining <= 0 then cast(data_as_of.as_of_at as date)
            when reach.days_p10 <= 36500 then cast(data_as_of.as_of_at + to_seconds(cast(round(reach.days_p10 * 86400) as bigint)) as date)
        end as target_reached_on_p10,
        case
            when remaining.remaining <= 0 then cast(data_as_of.as_of_at as date)
            when reach.days_p50 <= 36500 then cast(data_as_of.as_of_at + to_seconds(cast(round(reach.days_p50 * 86400) as bigint)) as date)
        end as target_reached_on_p50,
        case
            when remaining.remaining <= 0 then cast(data_as_of.as_of_at as date)
            when reach.days_p90 <= 36500 then cast(data_as_of.as_of_at + to_seconds(cast(round(reach.days_p90 * 86400) as bigint)) as date)
        end as target_reached_on_p90,
        case
            when remaining.target_date is null then null
            when remaining.remaining <= 0 then 1.0
            else coalesce(reach_by_target_date.probability, 0.0)
        end as probability_target_met_by_target_date,
        30 * total_rate.site_rate_mean as site_rate_per_30d_mean,
        total_rate.alpha_mean as site_rate_shape_mean,
        total_rate.grid_points,
        'poisson_gamma_grid' as method,
    from trials
    cross join data_as_of
    inner join total_rate
        on trials.trial_id = total_rate.trial_id
    left join enrolled
        on trials.trial_id = enrolled.trial_id
    left join next_91d
        on trials.trial_id = next_91d.trial_id
    left join remaining
        on trials.trial_id = remaining.trial_id
    left join reach
        on trials.trial_id = reach.trial_id
    left join reach_by_target_date
        on trials.trial_id = reach_by_target_date.trial_id
)

select * from final
