-- The incremental watermark (docs/incremental.md "dbt"): per stream, the last raw.events
-- position the models read, with the stream's rank in int_stream_ranks.
--
-- transform_watermarks_sql is the one text of that SQL: the job's runner expands it (plain
-- SQL, its parameter only as {{ schema }}) and runs it in the transform's transaction; dbt
-- runs it from save_transform_watermarks. `schema` is the schema of the models.
{% macro transform_watermarks_sql(schema) %}
delete from etl.transform_watermarks;
insert into etl.transform_watermarks
select events.stream_id, max(events.stream_position), any_value(streams.stream_rank)
from raw.events as events
inner join "{{ schema }}".int_stream_ranks as streams
    on events.stream_id = streams.stream_id
group by events.stream_id;
{% endmacro %}

-- dbt's side: after a dbt run or build in which every model of the project was built, store
-- the watermark as the job's runner does in its transform. A partial or failed run leaves the
-- watermark as it was (the next run then reads more, never less). Called from on-run-end
-- (dbt/dbt_project.yml); the job's runner never calls it.
{% macro save_transform_watermarks(results) %}
{%- if execute and flags.WHICH in ['run', 'build'] -%}
{%- set models = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model') | list -%}
{%- set built = results | selectattr('node.resource_type', 'equalto', 'model') | selectattr('status', 'equalto', 'success') | list -%}
{%- if built | length == models | length -%}
{{ recruit_etl.transform_watermarks_sql(target.schema) }}
{%- endif -%}
{%- endif -%}
{% endmacro %}
