-- One row per patientStatus value (on created or status-changed events) missing from
-- seed_patient_status_stages: staged as 'unmapped', never moving a high-water mark.

with

status_events as (
    select * from {{ ref('int_patient_status_events') }}
    where not is_mapped
),

final as (
    select
        patient_status,
        count(*) as event_count,
        count(distinct patient_key) as patient_count,
        min(status_at) as first_status_at,
        max(status_at) as last_status_at,
    from status_events
    group by patient_status
)

select * from final
