-- dbt's side of the incremental watermark (docs/incremental.md "dbt"): after a dbt run or
-- build in which every model of the project was built, store, per stream, the last
-- raw.events position the models read, as the job's runner does in its transform. A partial
-- or failed run leaves the watermark as it was (the next run then reads more, never less).
-- Called from on-run-end (dbt/dbt_project.yml); the job's runner never calls it.
{% macro save_transform_watermarks(results) %}
{%- if execute and flags.WHICH in ['run', 'build'] -%}
{%- set models = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | list -%}
{%- set built = results | selectattr('node.resource_type', 'equalto', 'model') | selectattr('status', 'equalto', 'success') | list -%}
{%- if built | length == models | length -%}
delete from etl.transform_watermarks;
insert into etl.transform_watermarks
select events.stream_id, max(events.stream_position), any_value(streams.stream_rank)
from raw.events as events
inner join "{{ target.schema }}".int_stream_ranks as streams
    on events.stream_id = streams.stream_id
group by events.stream_id;
{%- endif -%}
{%- endif -%}
{% endmacro %}
