-- One row per trial × site × UTC date with activity: the counts of int_patient_activities by
-- kind. The weekly and monthly site-activity marts sum these rows (every count is additive),
-- so the 1.5M activities of a million events are scanned once a transform, not once per mart
-- (docs/models.md "mart_site_activity").

with

activities as (
    select * from {{ ref('int_patient_activities') }}
),

final as (
    select
        trial_id,
        site_id,
        activity_date,
        count(*) filter (where activity = 'referral_received') as referrals_received,
        count(*) filter (where activity = 'referral_acknowledged') as referrals_acknowledged,
        count(*) filter (where activity = 'first_contact_attempt') as first_contact_attempts,
        count(*) filter (where activity = 'contact_attempt') as contact_attempts,
        count(*) filter (where activity = 'patient_reached') as patients_reached,
        count(*) filter (where activity = 'pre_screening') as pre_screenings,
        count(*) filter (where activity = 'visit_scheduled') as visits_scheduled,
        count(*) filter (where activity = 'screening') as screenings,
        count(*) filter (where activity = 'enrolment') as enrolments,
        count(*) filter (where activity = 'pre_screen_failure') as pre_screen_failures,
        count(*) filter (where activity = 'screen_failure') as screen_failures,
    from activities
    group by trial_id, site_id, activity_date
)

select * from final
