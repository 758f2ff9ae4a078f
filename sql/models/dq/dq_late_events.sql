-- One row per valid patient event published more than 24 hours after its domain time
-- (a contact attempt: after the end of its date). Threshold: int_patient_events.is_late.
-- Backfills of a new event version (docs/upstream.md "Stream properties") appear here by design.

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
    where is_late
),

final as (
    select
        event_id,
        event_type,
        entity,
        patient_key,
        trial_id,
        referral_subject_id,
        domain_at,
        published_at,
        publish_lag_hours,
        is_redundant_created,
        event_seq,
    from patient_events
)

select * from final
