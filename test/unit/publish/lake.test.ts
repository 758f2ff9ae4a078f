import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import {
  LAKE_ALIAS,
  RESERVED_SCHEMAS,
  lakePasswords,
  objectStoreCredentials,
  objectStoreSecrets,
  pipelineSchema,
  postgresConninfo,
  redactLake,
} from '../../../src/publish/lake.js';

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

describe('object-store credentials from the AWS_* variables (docs/lakehouse.md "Object storage")', () => {
  it('none without AWS_ACCESS_KEY_ID; AWS itself (vhost, TLS, us-east-1) without an endpoint', () => {
    expect(objectStoreCredentials({})).toBeUndefined();
    expect(objectStoreCredentials({ AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI' })).toEqual({
      keyId: 'AKIAEXAMPLE',
      secret: 'wJalrXUtnFEMI',
      region: 'us-east-1',
      useSsl: true,
      urlStyle: 'vhost',
    });
  });

  it('an S3-compatible endpoint: host:port, path style, TLS as its scheme says; the S3 endpoint and AWS_REGION win', () => {
    const c = objectStoreCredentials({
      AWS_ACCESS_KEY_ID: 'minio',
      AWS_SECRET_ACCESS_KEY: 'minio-secret',
      AWS_SESSION_TOKEN: 'token-123456',
      AWS_DEFAULT_REGION: 'eu-central-1',
      AWS_REGION: 'eu-west-1',
      AWS_ENDPOINT_URL: 'https://ignored.example:1',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9000',
    });
    expect(c).toEqual({
      keyId: 'minio',
      secret: 'minio-secret',
      sessionToken: 'token-123456',
      region: 'eu-west-1',
      endpoint: '127.0.0.1:9000',
      useSsl: false,
      urlStyle: 'path',
    });
    expect(
      objectStoreCredentials({ AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's', AWS_ENDPOINT_URL: 'https://minio.internal:9000/' }),
    ).toMatchObject({ endpoint: 'minio.internal:9000', useSsl: true });
  });

  it('exit 2 for a key id without its secret, or an endpoint that is not an http(s) URL of a host', () => {
    expect(() => objectStoreCredentials({ AWS_ACCESS_KEY_ID: 'k' })).toThrow(ConfigError);
    for (const bad of ['minio:9000', 'ftp://minio', 'https://minio/bucket']) {
      expect(() => objectStoreCredentials({ AWS_ACCESS_KEY_ID: 'k', AWS_SECRET_ACCESS_KEY: 's', AWS_ENDPOINT_URL: bad }), bad).toThrow(
        /AWS_ENDPOINT_URL must be/,
      );
    }
  });

  it('the key id, the secret and the token are the values to keep out of every output', () => {
    expect(
      objectStoreSecrets({
        AWS_ACCESS_KEY_ID: 'AKIAEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI',
        AWS_SESSION_TOKEN: 'tok-abcdefgh',
        AWS_REGION: 'eu-west-1',
      }).sort(),
    ).toEqual(['AKIAEXAMPLE', 'tok-abcdefgh', 'wJalrXUtnFEMI']);
  });

  it('reserved pipeline schemas: the views schema and the catalogs every DuckDB session has', () => {
    expect([...RESERVED_SCHEMAS].sort()).toEqual(['all_pipelines', 'memory', 'system', 'temp']);
    expect(LAKE_ALIAS.startsWith('_')).toBe(true);
  });
});
