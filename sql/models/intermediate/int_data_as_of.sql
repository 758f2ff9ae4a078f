-- One row: the data's as-of time (docs/domain.md "Measures"), the latest domain time of a
-- valid patient event that is not future-dated (int_patient_events.is_future_dated: more than
-- a day after its publication, else its extraction). A mistyped date in 2062 therefore
-- cannot move it; such events are listed in dq_future_dated_events. Rebuilt every transform
-- (one aggregate over a narrow column); the views that read it stay equal to a full rebuild.

with

patient_events as (
    select * from {{ ref('int_patient_events') }}
),

final as (
    select
        max(domain_at) filter (where not is_future_dated) as as_of_at,
    from patient_events
)

select * from final
