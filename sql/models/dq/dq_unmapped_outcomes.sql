-- One row per contact-attempt outcome value missing from seed_contact_outcomes.

with

attempt_outcomes as (
    select * from {{ ref('fct_contact_attempt_outcomes') }}
    where not is_mapped
),

final as (
    select
        contact_attempt_outcome,
        count(*) as contact_attempt_count,
        count(distinct patient_key) as patient_count,
    from attempt_outcomes
    group by contact_attempt_outcome
)

select * from final
