-- One row per data-quality check: how many issues it found (0 when none). The run summary
-- reads this table; details are in the dq_* model named by check_name.

with

unknown_event_types as (
    select * from {{ ref('dq_unknown_event_types') }}
),

unmapped_statuses as (
    select * from {{ ref('dq_unmapped_statuses') }}
),

unmapped_outcomes as (
    select * from {{ ref('dq_unmapped_outcomes') }}
),

orphan_events as (
    select * from {{ ref('dq_orphan_events') }}
),

late_events as (
    select * from {{ ref('dq_late_events') }}
),

multi_site_patients as (
    select * from {{ ref('dq_multi_site_patients') }}
),

invalid_events as (
    select * from {{ ref('dq_invalid_events') }}
),

quarantined_events as (
    select * from {{ ref('dq_quarantined_events') }}
),

unmapped_sites as (
    select * from {{ ref('dq_unmapped_sites') }}
),

future_dated_events as (
    select * from {{ ref('dq_future_dated_events') }}
),

checks as (
    select 'dq_unknown_event_types' as check_name, 'events of a type missing from seed_event_types' as description,
        coalesce(sum(event_count), 0) as issue_count, count(*) as detail_rows,
    from unknown_event_types
    union all
    select 'dq_unmapped_statuses', 'status events whose value is missing from seed_patient_status_stages',
        coalesce(sum(event_count), 0), count(*),
    from unmapped_statuses
    union all
    select 'dq_unmapped_outcomes', 'contact attempts with an outcome missing from seed_contact_outcomes',
        coalesce(sum(contact_attempt_count), 0), count(*),
    from unmapped_outcomes
    union all
    select 'dq_orphan_events', 'events of patients without a created event',
        count(*), count(*),
    from orphan_events
    union all
    select 'dq_late_events', 'events published more than 24 hours after their domain time',
        count(*), count(*),
    from late_events
    union all
    select 'dq_multi_site_patients', 'patients whose events carry several site ids',
        count(*), count(*),
    from multi_site_patients
    union all
    select 'dq_invalid_events', 'known-type events missing a required field',
        count(*), count(*),
    from invalid_events
    union all
    select 'dq_quarantined_events', 'events whose text DuckDB cannot store as JSON, kept in a readable form',
        count(*), count(*),
    from quarantined_events
    union all
    select 'dq_unmapped_sites', 'event sites (trial × site) without a display name in seed_site_names (--site-names)',
        count(*), count(*),
    from unmapped_sites
    union all
    select 'dq_future_dated_events', 'events whose domain time is more than a day after their publication (else extraction)',
        count(*), count(*),
    from future_dated_events
),

final as (
    select
        check_name,
        description,
        cast(issue_count as bigint) as issue_count,
        cast(detail_rows as bigint) as detail_rows,
    from checks
)

select * from final
