-- One row per version of a study-website site's attributes: consecutive snapshots with the
-- same attributes form one version, valid from its first fetch until the next version's
-- first fetch (valid_to null: the latest version). A site missing from later fetches keeps
-- its last version open; dim_study_website_sites.is_current says whether it is still listed.

with

snapshots as (
    select * from {{ ref('stg_site_snapshots') }}
    where website_site_id is not null
),

deduplicated as (
    -- One row per site per fetch (a fetch may list a site twice).
    select *
    from snapshots
    qualify row_number() over (
        partition by website_microsite_id, trial_id, website_site_id, fetched_at, run_id
        order by attributes_hash
    ) = 1
),

version_starts as (
    select
        *,
        coalesce(
            attributes_hash is distinct from lag(attributes_hash) over site_fetches,
            true
        ) as is_version_start,
    from deduplicated
    window site_fetches as (
        partition by website_microsite_id, trial_id, website_site_id
        order by fetched_at, run_id
    )
),

numbered as (
    select
        *,
        cast(sum(case when is_version_start then 1 else 0 end) over (
            partition by website_microsite_id, trial_id, website_site_id
            order by fetched_at, run_id
            rows between unbounded preceding and current row
        ) as integer) as version_number,
    from version_starts
),

versions as (
    select
        website_microsite_id,
        trial_id,
        website_site_id,
        version_number,
        min(fetched_at) as valid_from,
        max(fetched_at) as last_seen_at,
        count(*) as snapshot_count,
        arg_min(website_display_name, fetched_at) as website_display_name,
        arg_min(website_site_name, fetched_at) as website_site_name,
        arg_min(sponsor_site_id, fetched_at) as sponsor_site_id,
        arg_min(street, fetched_at) as street,
        arg_min(address1, fetched_at) as address1,
        arg_min(address2, fetched_at) as address2,
        arg_min(city, fetched_at) as city,
        arg_min(state, fetched_at) as state,
        arg_min(postal_code, fetched_at) as postal_code,
        arg_min(country, fetched_at) as country,
        arg_min(phone_number, fetched_at) as phone_number,
        arg_min(latitude, fetched_at) as latitude,
        arg_min(longitude, fetched_at) as longitude,
    from numbered
    group by website_microsite_id, trial_id, website_site_id, version_number
),

final as (
    select
        {{ surrogate_key(['website_microsite_id', 'trial_id', 'website_site_id']) }}
            || '-' || version_number as website_site_version_id,
        {{ surrogate_key(['website_microsite_id', 'trial_id', 'website_site_id']) }} as website_site_key,
        website_microsite_id,
        trial_id,
        website_site_id,
        version_number,
        valid_from,
        lead(valid_from) over (
            partition by website_microsite_id, trial_id, website_site_id
            order by version_number
        ) as valid_to,
        last_seen_at,
        snapshot_count,
        website_display_name,
        website_site_name,
        sponsor_site_id,
        street,
        address1,
        address2,
        city,
        state,
        postal_code,
        country,
        phone_number,
        latitude,
        longitude,
        coalesce(
            latitude between -90 and 90
                and longitude between -180 and 180
                and not (latitude = 0 and longitude = 0),
            false
        ) as has_valid_geo,
    from versions
)

select * from final
