import { describe, expect, it } from 'vitest';
import { lakePasswords, pipelineSchema, postgresConninfo, redactLake } from '../../../src/publish/lake.js';

describe('lake attach strings (docs/lakehouse.md "Attach string and options")', () => {
  it('finds the libpq connection string of a postgres catalog, and nothing for another catalog', () => {
    expect(postgresConninfo('ducklake:postgres:dbname=lake host=db user=etl')).toBe('dbname=lake host=db user=etl');
    expect(postgresConninfo('ducklake:/srv/lake/catalog.ducklake')).toBeUndefined();
  });

  it('registers and redacts passwords, quoted or not, and URI user info', () => {
    const lake = "ducklake:postgres:dbname=lake password='s3 cr#t' host=db";
    expect(lakePasswords(lake)).toEqual(['s3 cr#t']);
    expect(redactLake(lake)).toBe('ducklake:postgres:dbname=lake password=*** host=db');
    expect(lakePasswords('ducklake:postgres:password=hunter2 host=db')).toEqual(['hunter2']);
    expect(redactLake('ducklake:postgres:postgresql://etl:hunter2@db/lake')).toBe('ducklake:postgres:postgresql://etl:***@db/lake');
    expect(lakePasswords('ducklake:postgres:postgresql://etl:hunter2@db/lake')).toEqual(['hunter2']);
  });

  it('names the pipeline schema after --lake-schema, else the environment label', () => {
    expect(pipelineSchema('sponsor_a', 'production')).toBe('sponsor_a');
    expect(pipelineSchema(undefined, 'production')).toBe('production');
    expect(pipelineSchema(undefined, 'EU-Staging')).toBe('eu_staging');
    expect(pipelineSchema(undefined, '2026')).toBe('p_2026');
  });
});
