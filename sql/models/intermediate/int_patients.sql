-- One row per patient (trial_id, referral_subject_id) seen in any valid event: the spine.
-- Created facts come from the patient's first created event (by domain time, then event
-- order); the site is that event's site, else the site of the patient's first event.

{{ config(materialized='incremental', unique_key='patient_key', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

patients_created as (
    select * from {{ ref('int_patient_created_events') }} as source_rows
    where has_required_fields
    {% if is_incremental() %}
        and (source_rows.trial_id, source_rows.referral_subject_id) in (
            -- a semi-join on the pair, not EXISTS: docs/incremental.md "Delta filters"
            select trial_id, referral_subject_id from {{ ref('int_delta_patients') }}
        )
    {% endif %}
),

created_summary as (
    -- Per patient: the first created event (domain time, then event order), how many
    -- created events and of which types. One hash aggregate, no window.
    select
        trial_id,
        referral_subject_id,
        arg_min(
            {
                'event_id': event_id,
                'site_id': site_id,
                'sponsor_site_id': sponsor_site_id,
                'patient_status': patient_status,
                'referral_received_at': referral_received_at,
                'created_at': created_at,
            },
            (domain_at, event_seq)
        ) as first_created,
        count(*) as created_event_count,
        list_sort(list_distinct(list(event_type))) as created_event_types,
    from patients_created
    group by trial_id, referral_subject_id
),

site_visits as (
    -- First stage: one row per patient and site (a patient has few), simple aggregates only.
    select
        patient_key,
        trial_id,
        referral_subject_id,
        site_id,
        -- the first event at this site (domain time, then event order)
        min((domain_at, event_seq)) as first_event_order,
        count(*) as event_count,
        min(domain_at) as first_event_at,
        max(domain_at) as last_event_at,
        bool_or(is_late and not is_redundant_created) as has_late_events,
    from patient_events
    group by patient_key, trial_id, referral_subject_id, site_id
),

event_summary as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        -- the site of the patient's first event (domain time, then event order), null kept
        arg_min({'site_id': site_id}, first_event_order).site_id as first_event_site_id,
        sum(event_count) as event_count,
        count(site_id) as site_count,
        list_sort(list(site_id) filter (where site_id is not null)) as site_ids,
        min(first_event_at) as first_event_at,
        max(last_event_at) as last_event_at,
        bool_or(has_late_events) as has_late_events,
    from site_visits
    group by patient_key, trial_id, referral_subject_id
),

final as (
    select
        event_summary.patient_key,
        event_summary.trial_id,
        event_summary.referral_subject_id,
        coalesce(created_summary.first_created.site_id, event_summary.first_event_site_id) as site_id,
        coalesce(created_summary.first_created.site_id is not null, false) as is_site_from_created_event,
        created_summary.first_created.sponsor_site_id,
        coalesce(created_summary.first_created.event_id is not null, false) as has_created_event,
        created_summary.first_created.event_id as created_event_id,
        coalesce(created_summary.created_event_count, 0) as created_event_count,
        coalesce(created_summary.created_event_types, []::varchar[]) as created_event_types,
        created_summary.first_created.patient_status as created_patient_status,
        created_summary.first_created.referral_received_at,
        created_summary.first_created.created_at,
        coalesce(
            created_summary.first_created.referral_received_at,
            created_summary.first_created.created_at
        ) as referral_at,
        cast(event_summary.event_count as bigint) as event_count,
        event_summary.site_count,
        coalesce(event_summary.site_ids, []::varchar[]) as site_ids,
        event_summary.site_count > 1 as is_multi_site,
        event_summary.first_event_at,
        event_summary.last_event_at,
        event_summary.has_late_events,
    from event_summary
    left join created_summary
        on event_summary.trial_id = created_summary.trial_id
        and event_summary.referral_subject_id = created_summary.referral_subject_id
)

select * from final
