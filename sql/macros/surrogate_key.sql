-- A surrogate key (docs/models.md "Keys"): md5 of the JSON array of the given SQL expressions
-- (column names), so no separator inside a value can make two rows one key, and a NULL is
-- not an empty string. `columns` is a list, as dbt_utils' generate_surrogate_key takes it:
-- {{ surrogate_key(['trial_id', 'site_id']) }}. patient_key is this key of the two patient ids.
{% macro surrogate_key(columns) %}
md5(json_array({{ columns | join(', ') }})::varchar)
{% endmacro %}
