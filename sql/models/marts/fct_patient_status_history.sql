-- One row per status spell of a patient:
-- the stored rows of int_patient_status_history, exported as they are.
-- The int_ model holds the logic, so the int_ models that need these facts read it, never a
-- fct_ model (docs/models.md "Layers"). A view that names the table's unique_key: publish
-- merges it into the lake by that key (docs/lakehouse.md); the runner does not use it.

{{ config(materialized='view', unique_key='patient_key') }}

with

status_history as (
    select * from {{ ref('int_patient_status_history') }}
),

final as (
    select * from status_history
)

select * from final
