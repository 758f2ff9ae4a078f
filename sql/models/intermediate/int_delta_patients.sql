-- The patients whose entity rows an incremental transform recomputes (docs/incremental.md):
-- the patient of every delivery of a new event (first delivery or not: a redelivery that
-- changes which delivery is first may name another patient), and every patient of any event
-- of a contact attempt a new event belongs to (an attempt's owner and its number per patient
-- may move).

with

delta_events as (
    select * from {{ ref('int_delta_events') }}
),

deliveries as (
    -- every delivery of a new event: narrow keys first, the message read for these rows only
    select
        stream_id,
        stream_position,
    from {{ ref('stg_events') }}
    where event_id in (select event_id from delta_events)
),

delivered_keys as (
    select
        events.message ->> 'trialId' as trial_id,
        events.message ->> 'referralSubjectId' as referral_subject_id,
    from {{ ref('stg_events') }} as events
    inner join deliveries
        on events.stream_id = deliveries.stream_id
        and events.stream_position = deliveries.stream_position
),

staged_keys as (
    -- by event_seq, not event_id: docs/incremental.md "Delta filters"
    select
        trial_id,
        referral_subject_id,
    from {{ ref('int_events_deduplicated') }}
    where event_seq in (select event_seq from {{ ref('int_delta_event_seqs') }})
),

touched_attempts as (
    select distinct contact_attempt_id
    from {{ ref('int_contact_attempt_events') }}
    where event_seq in (select event_seq from {{ ref('int_delta_event_seqs') }})
        and contact_attempt_id is not null
),

attempt_keys as (
    select
        trial_id,
        referral_subject_id,
    from {{ ref('int_contact_attempt_events') }}
    where contact_attempt_id in (select contact_attempt_id from touched_attempts)
),

unioned as (
    select * from delivered_keys
    union
    select * from staged_keys
    union
    select * from attempt_keys
),

final as (
    select
        {{ patient_key('trial_id', 'referral_subject_id') }} as patient_key,
        trial_id,
        referral_subject_id,
    from unioned
    where trial_id is not null
        and referral_subject_id is not null
)

select * from final
