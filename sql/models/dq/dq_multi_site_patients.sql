-- One row per patient whose events carry more than one site_id; the patient is attributed
-- to the site of its created event (fct_patient_funnel.site_id).

with

patients as (
    select * from {{ ref('int_patients') }}
    where is_multi_site
),

final as (
    select
        patient_key,
        trial_id,
        referral_subject_id,
        site_id as attributed_site_id,
        is_site_from_created_event,
        site_count,
        site_ids,
    from patients
)

select * from final
