-- One row per dated recruitment activity of a patient, on the day of the activity itself
-- (its own domain time, UTC), at the patient's attributed site (docs/domain.md "Site
-- attribution"): the referral, the first acknowledgement, every contact attempt and the
-- first one, the first reach, the first time each funnel stage was reached (high-water mark,
-- so a jump to enrolled also dates the stages it implies), the first pre-screen and screen
-- failure. mart_site_activity and mart_site_activity_monthly count these rows per period
-- (docs/models.md "mart_site_activity").
-- Incremental by patient (docs/incremental.md): a patient's activities are recomputed when
-- one of its events is new; none of them depends on as_of_at.

{{ config(materialized='incremental', unique_key='patient_key', incremental_strategy='delete+insert') }}
-- dbt sees refs inside is_incremental() blocks only when named here (docs/incremental.md "dbt").
-- depends_on: {{ ref('int_delta_patients') }}

with

funnel as (
    select * from {{ ref('int_patient_funnel') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

contact_attempts as (
    select * from {{ ref('int_contact_attempts') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

status_history as (
    select * from {{ ref('int_patient_status_history') }}
    {% if is_incremental() %}
    where patient_key in (select patient_key from {{ ref('int_delta_patients') }})
    {% endif %}
),

failures as (
    -- The first spell of each off-path failure per patient.
    select
        patient_key,
        min(valid_from) filter (where stage = 'pre_screen_failed') as pre_screen_failed_at,
        min(valid_from) filter (where stage = 'screen_failed') as screen_failed_at,
    from status_history
    group by patient_key
),

milestones as (
    -- One list entry per milestone; orphans have no referral (referral_at null), so no
    -- referral row. The activity names are the model's own, not status values.
    select
        funnel.patient_key,
        funnel.trial_id,
        funnel.site_id,
        unnest([
            {'activity': 'referral_received', 'activity_date': cast(funnel.referral_at as date)},
            {'activity': 'referral_acknowledged', 'activity_date': cast(funnel.acknowledged_at as date)},
            {'activity': 'first_contact_attempt', 'activity_date': funnel.first_contact_attempt_date},
            {'activity': 'patient_reached', 'activity_date': funnel.reached_date},
            {'activity': 'pre_screening', 'activity_date': cast(funnel.pre_screening_at as date)},
            {'activity': 'visit_scheduled', 'activity_date': cast(funnel.visit_scheduled_at as date)},
            {'activity': 'screening', 'activity_date': cast(funnel.screening_at as date)},
            {'activity': 'enrolment', 'activity_date': cast(funnel.enrolled_at as date)},
            {'activity': 'pre_screen_failure', 'activity_date': cast(failures.pre_screen_failed_at as date)},
            {'activity': 'screen_failure', 'activity_date': cast(failures.screen_failed_at as date)},
        ]) as milestone,
    from funnel
    left join failures
        on funnel.patient_key = failures.patient_key
),

dated_milestones as (
    select
        patient_key,
        trial_id,
        site_id,
        milestone.activity,
        milestone.activity_date,
    from milestones
    where milestone.activity_date is not null
),

attempts as (
    -- Every contact attempt on its own date, at the patient's site.
    select
        contact_attempts.patient_key,
        funnel.trial_id,
        funnel.site_id,
        'contact_attempt' as activity,
        contact_attempts.contact_attempt_date as activity_date,
    from contact_attempts
    inner join funnel
        on contact_attempts.patient_key = funnel.patient_key
),

final as (
    select patient_key, trial_id, site_id, activity, activity_date from dated_milestones
    union all
    select patient_key, trial_id, site_id, activity, activity_date from attempts
)

select * from final
