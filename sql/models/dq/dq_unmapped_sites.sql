-- One row per event site (trial_id, site_id) without a display name in seed_site_names (the
-- operator's --site-names CSV; docs/models.md "Site names"): the marts show its site id only.
-- Events without a site id are not listed.

with

site_names as (
    select * from {{ ref('int_site_names') }}
    where not is_mapped
),

patients as (
    select * from {{ ref('int_patients') }}
),

attributed as (
    select
        trial_id,
        site_id,
        count(*) as patient_count,
    from patients
    group by trial_id, site_id
),

final as (
    select
        site_names.trial_id,
        site_names.site_id,
        site_names.event_count,
        coalesce(attributed.patient_count, 0) as patient_count,
        site_names.first_event_at,
        site_names.last_event_at,
    from site_names
    left join attributed
        on site_names.trial_id = attributed.trial_id
        and site_names.site_id = attributed.site_id
)

select * from final
