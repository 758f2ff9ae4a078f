-- One row per contact attempt (contact_attempt_id):
-- the stored rows of int_contact_attempts, exported as they are.
-- The int_ model holds the logic, so the int_ models that need these facts read it, never a
-- fct_ model (docs/models.md "Layers"). A view that names the table's unique_key: publish
-- merges it into the lake by that key (docs/lakehouse.md); the runner does not use it.

{{ config(materialized='view', unique_key='contact_attempt_id') }}

with

contact_attempts as (
    select * from {{ ref('int_contact_attempts') }}
),

final as (
    select * from contact_attempts
)

select * from final
