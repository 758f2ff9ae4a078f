-- A domain timestamp text as a UTC `timestamp` (docs/models.md "Time"): with `Z` or an
-- offset it is parsed as `timestamptz` and converted to UTC; without one it is read as UTC.
-- Unparseable text gives NULL. `column` is the name of a text column.
{% macro utc_timestamp(column) %}
case
    when regexp_matches({{ column }}, '\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*([Zz]|[+-]\d{2}(:?\d{2})?)$')
        then try_cast({{ column }} as timestamptz) at time zone 'UTC'
    else try_cast({{ column }} as timestamp)
end
{% endmacro %}
