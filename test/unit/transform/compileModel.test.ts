import { describe, expect, test } from 'vitest';
import { TransformError } from '../../../src/errors.js';
import { compileModel } from '../../../src/transform/compileModel.js';

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
