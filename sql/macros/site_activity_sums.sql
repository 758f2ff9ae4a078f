-- The activity counts of int_site_activity_daily summed over a period (docs/models.md
-- "mart_site_activity"): the select list shared by the weekly and monthly site-activity marts,
-- which group the daily rows by their period. Each count stays a BIGINT.
{% macro site_activity_sums() %}
sum(referrals_received)::bigint as referrals_received,
        sum(referrals_acknowledged)::bigint as referrals_acknowledged,
        sum(first_contact_attempts)::bigint as first_contact_attempts,
        sum(contact_attempts)::bigint as contact_attempts,
        sum(patients_reached)::bigint as patients_reached,
        sum(pre_screenings)::bigint as pre_screenings,
        sum(visits_scheduled)::bigint as visits_scheduled,
        sum(screenings)::bigint as screenings,
        sum(enrolments)::bigint as enrolments,
        sum(pre_screen_failures)::bigint as pre_screen_failures,
        sum(screen_failures)::bigint as screen_failures,
{% endmacro %}
