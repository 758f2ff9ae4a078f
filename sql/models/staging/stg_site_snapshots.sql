-- One row per site per `sites` run (raw.site_snapshots), with website_-prefixed ids:
-- study-website site ids are another namespace than event site ids (docs/upstream.md "Services and identifiers").

with

snapshots as (
    select * from {{ source('raw', 'site_snapshots') }}
),

final as (
    select
        run_id,
        fetched_at at time zone 'UTC' as fetched_at,
        microsite_id as website_microsite_id,
        trial_id,
        site_id as website_site_id,
        display_name as website_display_name,
        site_name as website_site_name,
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
        {{ surrogate_key([
            'display_name', 'site_name', 'sponsor_site_id', 'street', 'address1', 'address2', 'city',
            'state', 'postal_code', 'country', 'phone_number', 'latitude', 'longitude',
        ]) }} as attributes_hash,
    from snapshots
)

select * from final
