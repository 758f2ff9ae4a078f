-- One row per outcome of a contact attempt:
-- the stored rows of int_contact_attempt_outcomes, exported as they are.
-- The int_ model holds the logic, so the int_ models that need these facts read it, never a
-- fct_ model (docs/models.md "Layers"). A view that names the table's unique_key: publish
-- merges it into the lake by that key (docs/lakehouse.md); the runner does not use it.

{{ config(materialized='view', unique_key='contact_attempt_id') }}

with

contact_attempt_outcomes as (
    select * from {{ ref('int_contact_attempt_outcomes') }}
),

final as (
    select * from contact_attempt_outcomes
)

select * from final
