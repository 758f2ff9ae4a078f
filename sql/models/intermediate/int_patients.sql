-- One row per patient (trial_id, referral_subject_id) seen in any valid event: the spine.
-- Created facts come from the patient's first created event (by domain time, then event
-- order); the site is that event's site, else the site of the patient's first event.

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
),

patients_created as (
    select * from {{ ref('stg_patients_created') }}
    where has_required_fields
),

first_created as (
    select
        *,
        count(*) over (partition by trial_id, referral_subject_id) as created_event_count,
    from patients_created
    qualify row_number() over (
        partition by trial_id, referral_subject_id
        order by domain_at, event_seq
    ) = 1
),

created_versions as (
    select
        trial_id,
        referral_subject_id,
        list(distinct event_type order by event_type) as created_event_types,
    from patients_created
    group by trial_id, referral_subject_id
),

first_events as (
    select *
    from patient_events
    qualify row_number() over (
        partition by patient_key
        order by domain_at, event_seq
    ) = 1
),

event_summary as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        count(*) as event_count,
        count(distinct site_id) as site_count,
        list(distinct site_id order by site_id) filter (where site_id is not null) as site_ids,
        min(domain_at) as first_event_at,
        max(domain_at) as last_event_at,
        bool_or(is_late and not is_redundant_created) as has_late_events,
    from patient_events
    group by patient_key, trial_id, referral_subject_id
),

final as (
    select
        event_summary.patient_key,
        event_summary.trial_id,
        event_summary.referral_subject_id,
        coalesce(first_created.site_id, first_events.site_id) as site_id,
        first_created.site_id is not null as is_site_from_created_event,
        first_created.sponsor_site_id,
        first_created.event_id is not null as has_created_event,
        first_created.event_id as created_event_id,
        coalesce(first_created.created_event_count, 0) as created_event_count,
        coalesce(created_versions.created_event_types, []::varchar[]) as created_event_types,
        first_created.patient_status as created_patient_status,
        first_created.referral_received_at,
        first_created.created_at,
        coalesce(first_created.referral_received_at, first_created.created_at) as referral_at,
        event_summary.event_count,
        event_summary.site_count,
        coalesce(event_summary.site_ids, []::varchar[]) as site_ids,
        event_summary.site_count > 1 as is_multi_site,
        event_summary.first_event_at,
        event_summary.last_event_at,
        event_summary.has_late_events,
    from event_summary
    inner join first_events
        on event_summary.patient_key = first_events.patient_key
    left join first_created
        on event_summary.trial_id = first_created.trial_id
        and event_summary.referral_subject_id = first_created.referral_subject_id
    left join created_versions
        on event_summary.trial_id = created_versions.trial_id
        and event_summary.referral_subject_id = created_versions.referral_subject_id
)

select * from final
