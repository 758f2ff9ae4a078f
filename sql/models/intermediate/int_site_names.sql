-- One row per event site (trial_id, site_id) seen in any valid patient event, with the display
-- name and sponsor site id the operator gave it in seed_site_names (docs/models.md "Site
-- names"). A row for the trial wins over a row for every trial (empty trial_id); of equal
-- rows, the first by name. Event site ids are matched to the mapping's site_id only, never to
-- study-website site ids (another namespace, docs/domain.md "Site ids").

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
    where site_id is not null
),

site_names as (
    select * from {{ ref('seed_site_names') }}
    where site_id is not null
        and site_name is not null
),

event_sites as (
    select
        trial_id,
        site_id,
        count(*) as event_count,
        min(domain_at) as first_event_at,
        max(domain_at) as last_event_at,
    from patient_events
    group by trial_id, site_id
),

chosen_names as (
    select
        event_sites.trial_id,
        event_sites.site_id,
        arg_min(
            {
                'site_name': site_names.site_name,
                'sponsor_site_id': site_names.sponsor_site_id,
                'is_trial_specific': site_names.trial_id is not null,
            },
            (site_names.trial_id is null, site_names.site_name, coalesce(site_names.sponsor_site_id, ''))
        ) as mapping,
    from event_sites
    inner join site_names
        on event_sites.site_id = site_names.site_id
        and (site_names.trial_id is null or event_sites.trial_id = site_names.trial_id)
    group by event_sites.trial_id, event_sites.site_id
),

final as (
    select
        event_sites.trial_id,
        event_sites.site_id,
        chosen_names.mapping.site_name,
        chosen_names.mapping.sponsor_site_id as mapped_sponsor_site_id,
        chosen_names.trial_id is not null as is_mapped,
        coalesce(chosen_names.mapping.is_trial_specific, false) as is_trial_specific_name,
        event_sites.event_count,
        event_sites.first_event_at,
        event_sites.last_event_at,
    from event_sites
    left join chosen_names
        on event_sites.trial_id = chosen_names.trial_id
        and event_sites.site_id = chosen_names.site_id
)

select * from final
