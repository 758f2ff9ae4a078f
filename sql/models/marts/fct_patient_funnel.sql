-- One row per patient (trial_id, referral_subject_id) seen in any event, orphans (no created
-- event yet) included and flagged: referral, acknowledgement and contact milestones, the
-- stages ever reached (high-water mark of implied ranks), off-path outcomes, the current
-- status, and flags. Durations are measured against the data, never against now().
-- A view (docs/incremental.md "Columns that move with the data"): the stored facts of
-- int_patient_funnel plus the columns that depend on the data's as-of time (int_data_as_of),
-- so that a night recomputes only the patients it touched.

{{ config(materialized='view') }}

with

patient_funnel as (
    select * from {{ ref('int_patient_funnel') }}
),

data_as_of as (
    select * from {{ ref('int_data_as_of') }}
),

final as (
    select
        patient_funnel.patient_key,
        patient_funnel.trial_id,
        patient_funnel.referral_subject_id,
        patient_funnel.site_id,
        patient_funnel.sponsor_site_id,
        patient_funnel.referral_received_at,
        patient_funnel.created_at,
        patient_funnel.referral_at,
        patient_funnel.referral_date,
        patient_funnel.referral_week,
        patient_funnel.acknowledged_at,
        patient_funnel.is_acknowledged,
        patient_funnel.hours_to_acknowledgement,
        patient_funnel.acknowledgement_event_count,
        patient_funnel.contact_attempt_count,
        patient_funnel.is_contact_attempted,
        patient_funnel.first_contact_attempt_date,
        patient_funnel.last_contact_attempt_date,
        patient_funnel.days_to_first_contact_attempt,
        patient_funnel.contact_attempt_span_days,
        patient_funnel.attempts_until_reached,
        patient_funnel.first_reached_date,
        patient_funnel.reached_date,
        patient_funnel.is_reached,
        patient_funnel.is_unreachable_after_3_attempts,
        patient_funnel.reached_referred,
        patient_funnel.reached_pre_screening,
        patient_funnel.reached_visit_scheduled,
        patient_funnel.reached_screening,
        patient_funnel.reached_enrolled,
        patient_funnel.high_water_rank,
        patient_funnel.pre_screening_at,
        patient_funnel.visit_scheduled_at,
        patient_funnel.screening_at,
        patient_funnel.enrolled_at,
        patient_funnel.days_to_screening,
        patient_funnel.days_to_enrolled,
        patient_funnel.days_screening_to_enrolled,
        patient_funnel.ever_pre_screen_failed,
        patient_funnel.ever_screen_failed,
        patient_funnel.ever_dropped,
        patient_funnel.ever_archived,
        patient_funnel.current_status,
        patient_funnel.current_stage,
        patient_funnel.current_stage_rank,
        patient_funnel.current_status_since,
        date_diff('day', cast(patient_funnel.current_status_since as date), cast(data_as_of.as_of_at as date)) as days_in_current_status,
        patient_funnel.final_disposition,
        patient_funnel.status_spell_count,
        patient_funnel.has_created_event,
        patient_funnel.is_orphan,
        patient_funnel.created_event_count,
        patient_funnel.created_event_types,
        patient_funnel.is_multi_site,
        patient_funnel.site_count,
        patient_funnel.site_ids,
        patient_funnel.is_site_from_created_event,
        patient_funnel.has_regression,
        patient_funnel.has_unmapped_status,
        patient_funnel.has_backfilled_events,
        patient_funnel.event_count,
        patient_funnel.first_event_at,
        patient_funnel.last_event_at,
        data_as_of.as_of_at,
    from patient_funnel
    cross join data_as_of
)

select * from final
