-- One row per study-website site (website_microsite_id, trial_id, website_site_id) ever
-- listed: its attributes from the latest snapshot that listed it, when it was first and last
-- seen, and whether the latest fetch of its site list still lists it. website_site_id is
-- another namespace than event site_id (docs/upstream.md "Services and identifiers"): never join them by equality;
-- sponsor_site_id is kept for a bridge once validated.

with

snapshots as (
    select * from {{ ref('stg_site_snapshots') }}
    where website_site_id is not null
),

latest_fetches as (
    select
        website_microsite_id,
        trial_id,
        max(fetched_at) as latest_fetched_at,
    from snapshots
    group by website_microsite_id, trial_id
),

site_spans as (
    select
        website_microsite_id,
        trial_id,
        website_site_id,
        min(fetched_at) as first_seen_at,
        max(fetched_at) as last_seen_at,
        count(distinct run_id) as snapshot_count,
        count(distinct attributes_hash) as attribute_version_count,
    from snapshots
    group by website_microsite_id, trial_id, website_site_id
),

latest_rows as (
    select *
    from snapshots
    qualify row_number() over (
        partition by website_microsite_id, trial_id, website_site_id
        order by fetched_at desc, run_id desc
    ) = 1
),

final as (
    select
        {{ surrogate_key(['latest_rows.website_microsite_id', 'latest_rows.trial_id', 'latest_rows.website_site_id']) }}
            as website_site_key,
        latest_rows.website_microsite_id,
        latest_rows.trial_id,
        latest_rows.website_site_id,
        latest_rows.website_display_name,
        latest_rows.website_site_name,
        latest_rows.sponsor_site_id,
        latest_rows.street,
        latest_rows.address1,
        latest_rows.address2,
        latest_rows.city,
        latest_rows.state,
        latest_rows.postal_code,
        latest_rows.country,
        latest_rows.phone_number,
        latest_rows.latitude,
        latest_rows.longitude,
        coalesce(
            latest_rows.latitude between -90 and 90
                and latest_rows.longitude between -180 and 180
                and not (latest_rows.latitude = 0 and latest_rows.longitude = 0),
            false
        ) as has_valid_geo,
        site_spans.last_seen_at = latest_fetches.latest_fetched_at as is_current,
        site_spans.first_seen_at,
        site_spans.last_seen_at,
        site_spans.snapshot_count,
        site_spans.attribute_version_count,
        latest_rows.run_id as last_seen_run_id,
    from latest_rows
    inner join site_spans
        on latest_rows.website_microsite_id = site_spans.website_microsite_id
        and latest_rows.trial_id = site_spans.trial_id
        and latest_rows.website_site_id = site_spans.website_site_id
    inner join latest_fetches
        on latest_rows.website_microsite_id = latest_fetches.website_microsite_id
        and latest_rows.trial_id = latest_fetches.trial_id
)

select * from final
