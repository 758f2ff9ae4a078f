-- A domain timestamp text as a UTC `timestamp` (docs/models.md "Time"): with `Z` or an
-- offset it is parsed as `timestamptz` and converted to UTC; without one it is read as UTC.
-- Unparseable text gives NULL, and so does a time outside 1900–2199 (docs/models.md "Time"): a
-- year 300000 or `infinity` parses, then breaks date arithmetic in every later model.
-- `column` is the name of a text column.
{% macro utc_timestamp(column) %}
case
    when regexp_matches({{ column }}, '\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*([Zz]|[+-]\d{2}(:?\d{2})?)$')
        then case
            when try_cast({{ column }} as timestamptz) >= timestamptz '1900-01-01 00:00:00+00'
                and try_cast({{ column }} as timestamptz) < timestamptz '2200-01-01 00:00:00+00'
                then try_cast({{ column }} as timestamptz) at time zone 'UTC'
        end
    when try_cast({{ column }} as timestamp) >= timestamp '1900-01-01'
        and try_cast({{ column }} as timestamp) < timestamp '2200-01-01'
        then try_cast({{ column }} as timestamp)
end
{% endmacro %}
