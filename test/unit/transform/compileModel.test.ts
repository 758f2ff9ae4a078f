import { describe, expect, test } from 'vitest';
import { TransformError } from '../../../src/errors.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileModel, loadMacros, renderMacro } from '../../../src/transform/compileModel.js';
import { MACROS_DIR } from '../../../src/paths.js';

describe('compileModel', () => {
  test('resolves ref and source, strips config, records refs once', () => {
    const m = compileModel(
      'fct_x',
      `{{ config(materialized='view') }}
with a as (select * from {{ ref('stg_a') }}), b as (select * from {{ref("stg_a")}}),
c as (select * from {{ source('raw', 'events') }})
select * from a;`,
    );
    expect(m.materialized).toBe('view');
    expect(m.refs).toEqual(['stg_a']);
    expect(m.sources).toEqual(['raw.events']);
    expect(m.sql).toContain('from "main"."stg_a"');
    expect(m.sql).toContain('from "raw"."events"');
    expect(m.sql).not.toContain('{{');
    expect(m.sql.endsWith(';')).toBe(false);
  });

  test('defaults to a table', () => {
    expect(compileModel('m', 'select 1').materialized).toBe('table');
    expect(compileModel('m', `{{ config(tags=['x']) }} select 1`).materialized).toBe('table');
  });

  test('regex quantifiers like \\d{2} are not Jinja', () => {
    expect(compileModel('m', String.raw`select regexp_matches(x, '\d{2}:\d{2}') from t`).sql).toContain(String.raw`\d{2}`);
  });

  test('any other Jinja is refused with the model name and line', () => {
    expect(() => compileModel('m', 'select 1\n{% if true %} x {% endif %}')).toThrow(/model m: unsupported Jinja at line 2/);
    expect(() => compileModel('m', 'select {{ var("x") }}')).toThrow(TransformError);
    expect(() => compileModel('m', 'select 1 {# comment #}')).toThrow(TransformError);
  });

  test('refuses unsupported materializations, bad names and empty models', () => {
    expect(() => compileModel('m', `{{ config(materialized='incremental') }} select 1`)).toThrow(/incremental/);
    expect(() => compileModel('bad-name', 'select 1')).toThrow(TransformError);
    expect(() => compileModel('m', `select * from {{ ref('x; drop table y') }}`)).toThrow(TransformError);
    expect(() => compileModel('m', `{{ config(materialized='table') }}`)).toThrow(/empty/);
  });
});

describe('macros', () => {
  test("the project's utc_timestamp macro expands with its argument in every place", () => {
    const macros = loadMacros(MACROS_DIR);
    const m = compileModel(
      'stg_x',
      `select {{ utc_timestamp('created_time') }} as created_at, {{utc_timestamp("t2")}} as t2_at from {{ ref('stg_events') }}`,
      'main',
      macros,
    );
    expect(m.sql).not.toContain('{{');
    expect(m.sql).toContain("try_cast(created_time as timestamptz) at time zone 'UTC'");
    expect(m.sql).toContain('try_cast(created_time as timestamp)');
    expect(m.sql).toContain(String.raw`regexp_matches(t2, '\d{2}`);
    expect(m.refs).toEqual(['stg_events']);
  });

  test("the project's patient_key macro is the one patient key expression, and the only place it is written", async () => {
    const macros = loadMacros(MACROS_DIR);
    const m = compileModel('x', `select {{ patient_key('e.trial_id', 'e.referral_subject_id') }} as patient_key from e`, 'main', macros);
    expect(m.sql).toBe('select md5(json_array(e.trial_id, e.referral_subject_id)::varchar) as patient_key from e');
    const { readFileSync } = await import('node:fs');
    const { listModelFiles } = await import('../../../src/transform/runTransform.js');
    const { MODELS_DIR } = await import('../../../src/paths.js');
    const spelled = listModelFiles(MODELS_DIR).filter((f) => /md5\(\s*json_array\([^)]*referral_subject_id/.test(readFileSync(f, 'utf8')));
    expect(spelled).toEqual([]);
  });

  test('loads the definitions of a folder; a wrong call, an unknown macro or a missing folder are handled', () => {
    const dir = mkdtempSync(join(tmpdir(), 'macros-'));
    try {
      writeFileSync(
        join(dir, 'm.sql'),
        '-- doc\n{% macro pair(a, b) %}({{ a }}, {{b}}, {{ a }}){% endmacro %}\n{%- macro one() -%} 1 {%- endmacro -%}',
      );
      const macros = loadMacros(dir);
      expect([...macros.keys()]).toEqual(['pair', 'one']);
      expect(compileModel('m', `select {{ pair('x', "y") }}, {{ one() }}`, 'main', macros).sql).toBe('select (x, y, x), 1');
      expect(() => compileModel('m', `select {{ pair('x') }}`, 'main', macros)).toThrow(/takes 2 argument/);
      expect(() => compileModel('m', 'select {{ pair(x, y) }}', 'main', macros)).toThrow(/quoted strings/);
      expect(() => compileModel('m', `select {{ other('x') }}`, 'main', macros)).toThrow(TransformError);
      expect(loadMacros(join(dir, 'missing')).size).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('macro arguments (docs/models.md "Macros")', () => {
  const macros = (text: string): ReturnType<typeof loadMacros> => {
    const dir = mkdtempSync(join(tmpdir(), 'macros-'));
    try {
      writeFileSync(join(dir, 'm.sql'), text);
      return loadMacros(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const pair = macros(`{% macro pair(a, b) %}[{{ a }}|{{ b }}]{% endmacro %}{% macro key(cols) %}k({{ cols | join(', ') }}){% endmacro %}`);

  test('commas inside quotes, parentheses and brackets do not split arguments', () => {
    expect(compileModel('m', `select {{ pair('x, y', "f(a, b)") }}`, 'main', pair).sql).toBe('select [x, y|f(a, b)]');
    expect(compileModel('m', `select {{ pair('(,', ')') }}`, 'main', pair).sql).toBe('select [(,|)]');
    expect(compileModel('m', `select {{ key(['coalesce(a, b)', "c, d", 'e']) }} from t`, 'main', pair).sql).toBe(
      'select k(coalesce(a, b), c, d, e) from t',
    );
  });

  test('a list argument spans lines, may end in a comma, and is joined where the macro says', () => {
    expect(compileModel('m', `select {{ key([\n  'a',\n  'b',\n]) }}`, 'main', pair).sql).toBe('select k(a, b)');
    expect(compileModel('m', `select {{key([])}}, {{ key(['a']) }}`, 'main', pair).sql).toBe('select k(), k(a)');
  });

  test('a wrong number of arguments names the macro and both counts; a list counts as one', () => {
    expect(() => compileModel('m', `select {{ pair('a, b') }}`, 'main', pair)).toThrow(/model m: pair\(\) takes 2 argument\(s\), got 1/);
    expect(() => compileModel('m', `select {{ key(['a'], ['b']) }}`, 'main', pair)).toThrow(/key\(\) takes 1 argument\(s\), got 2/);
    expect(() => compileModel('m', `select {{ key('a', 'b', 'c') }}`, 'main', pair)).toThrow(/takes 1 argument\(s\), got 3/);
  });

  test('malformed calls and arguments of the wrong kind are refused', () => {
    const bad: [string, RegExp][] = [
      [`{{ pair('a', 'b) }}`, /quoted string is not closed/],
      [`{{ pair('a', ('b') }}`, /'\)' is missing/],
      [`{{ key(['a', 'b') }}`, /'\)' does not close anything|'\]' is missing/],
      [`{{ pair('a', 'b') }`, /not closed by '}}'/],
      [`{{ key(['a', b]) }}`, /items of a list argument must be quoted strings, got b/],
      [`{{ key('a') }}`, /argument cols must be a list/],
      [`{{ pair(['a'], 'b') }}`, /argument a must be a quoted string, got a list/],
      [`{{ pair(a(1, 2), 'b') }}`, /quoted strings or lists of quoted strings, got a\(1, 2\)/],
    ];
    for (const [call, message] of bad) {
      expect(() => compileModel('m', `select ${call}`, 'main', pair), call).toThrow(message);
      expect(() => compileModel('m', `select ${call}`, 'main', pair), call).toThrow(TransformError);
    }
  });

  test("the project's surrogate_key macro gives the md5 of the JSON array, and no model spells it out", async () => {
    const project = loadMacros(MACROS_DIR);
    const m = compileModel('x', `select {{ surrogate_key(['s.trial_id', 's.site_id', 's.activity_week']) }} as k from s`, 'main', project);
    expect(m.sql).toBe('select md5(json_array(s.trial_id, s.site_id, s.activity_week)::varchar) as k from s');
    const { readFileSync } = await import('node:fs');
    const { listModelFiles } = await import('../../../src/transform/runTransform.js');
    const { MODELS_DIR } = await import('../../../src/paths.js');
    const files = listModelFiles(MODELS_DIR);
    expect(files.length).toBeGreaterThan(30);
    expect(files.filter((f) => /md5\(\s*json_array/.test(readFileSync(f, 'utf8')))).toEqual([]);
    expect(files.filter((f) => readFileSync(f, 'utf8').includes('surrogate_key(')).length).toBeGreaterThanOrEqual(7);
  });
});

describe('the watermark SQL, one text for the runner and dbt (docs/incremental.md "dbt")', () => {
  test('the runner runs the expanded transform_watermarks_sql macro', async () => {
    const { watermarkSql } = await import('../../../src/transform/runTransform.js');
    expect(watermarkSql('main')).toBe(
      [
        'delete from etl.transform_watermarks;',
        'insert into etl.transform_watermarks',
        'select events.stream_id, max(events.stream_position), any_value(streams.stream_rank)',
        'from raw.events as events',
        'inner join "main".int_stream_ranks as streams',
        '    on events.stream_id = streams.stream_id',
        'group by events.stream_id;',
      ].join('\n'),
    );
    expect(() => watermarkSql('ma"in')).toThrow(TransformError);
    expect(() => renderMacro('no_such_macro', [], loadMacros(MACROS_DIR))).toThrow(/not defined/);
  });

  test("dbt's on-run-end macro writes no SQL of its own: it calls the same macro", () => {
    const hook = loadMacros(MACROS_DIR).get('save_transform_watermarks');
    expect(hook?.params).toEqual(['results']);
    expect(hook!.body).toMatch(/\{\{\s*recruit_etl\.transform_watermarks_sql\(target\.schema\)\s*\}\}/);
    // outside its Jinja tags and the one call, nothing: no SQL text that could drift from the runner's
    expect(
      hook!.body
        .replace(/\{%[\s\S]*?%\}/g, '')
        .replace(/\{\{[^}]*\}\}/g, '')
        .trim(),
    ).toBe('');
  });
});

describe('incremental models (docs/incremental.md)', () => {
  const text = `{{ config(materialized='incremental', unique_key=['trial_id', 'site_id'], incremental_strategy='delete+insert') }}
-- depends_on: {{ ref('int_delta_patients') }}
select * from {{ ref('base') }}
{% if is_incremental() %}
where trial_id in (select trial_id from {{ ref('int_delta_patients') }}) and 1 = (select 1 from {{ this }} limit 1)
{% endif %}`;

  test('the full SQL drops the is_incremental() block, the incremental SQL keeps it; refs of both are collected', () => {
    const m = compileModel('agg', text);
    expect(m.materialized).toBe('incremental');
    expect(m.uniqueKey).toEqual(['trial_id', 'site_id']);
    expect(m.sql).not.toMatch(/where trial_id/);
    expect(m.incrementalSql).toMatch(/where trial_id in \(select trial_id from "main"\."int_delta_patients"\)/);
    expect(m.incrementalSql).toContain('from "main"."agg" limit 1');
    expect(m.refs).toEqual(['int_delta_patients', 'base']);
  });

  test('a table model has no incremental SQL; this resolves to the model itself', () => {
    const m = compileModel('plain', `select * from {{ this }}`);
    expect(m.materialized).toBe('table');
    expect(m.incrementalSql).toBeUndefined();
    expect(m.sql).toBe('select * from "main"."plain"');
  });

  test('an incremental model without unique_key, or with another strategy, is refused', () => {
    expect(() => compileModel('a', `{{ config(materialized='incremental') }} select 1`)).toThrow(/needs a unique_key/);
    expect(() =>
      compileModel('a', `{{ config(materialized='incremental', unique_key='k', incremental_strategy='merge') }} select 1 as k`),
    ).toThrow(/incremental_strategy='merge' is not supported/);
    expect(() => compileModel('a', `{{ config(materialized='ephemeral') }} select 1`)).toThrow(TransformError);
  });
});
