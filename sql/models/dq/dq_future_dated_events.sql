-- One row per valid patient event whose domain time lies more than a day after the job could
-- have seen it (its publication, else its extraction): a mistyped date such as a contact
-- attempt in 2062. Threshold: int_patient_events.is_future_dated. Such events keep their place
-- in the models but never move the data's as-of time (int_data_as_of).

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
    where is_future_dated
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
        extracted_at,
        event_seq,
    from patient_events
)

select * from final
