import { startMockApi, type MockApi, type MockApiOptions } from '../../packages/mock-api/src/index.js';
import { resolveConfig, type Config } from '../../src/config/config.js';

/** Start the simulator on port 0. */
export function startSim(options: MockApiOptions = {}): Promise<MockApi> {
  return startMockApi({ port: 0, ...options });
}

/** A validated config pointing at `api`, for in-process jobs. */
export function configFor(api: MockApi, db: string, extra: Record<string, unknown> = {}): Config {
  return resolveConfig(
    {
      db,
      baseUrl: api.baseUrl,
      authUrl: api.authUrl,
      clientId: api.options.clientId,
      clientSecret: api.options.clientSecret,
      audience: api.options.audience,
      trialId: api.truth.trialIds,
      micrositeId: api.options.micrositeId,
      origin: api.options.allowedOrigins[0],
      environment: 'staging',
      logLevel: 'silent',
      ...extra,
    },
    ['events'],
  );
}

/** The same settings as RECRUIT_ETL_* variables, for the CLI as a process. */
export function envFor(api: MockApi, db: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    RECRUIT_ETL_DB: db,
    RECRUIT_ETL_BASE_URL: api.baseUrl,
    RECRUIT_ETL_AUTH_URL: api.authUrl,
    RECRUIT_ETL_CLIENT_ID: api.options.clientId,
    RECRUIT_ETL_CLIENT_SECRET: api.options.clientSecret,
    RECRUIT_ETL_AUDIENCE: api.options.audience,
    RECRUIT_ETL_TRIAL_ID: api.truth.trialIds.join(','),
    RECRUIT_ETL_MICROSITE_ID: api.options.micrositeId,
    RECRUIT_ETL_ORIGIN: api.options.allowedOrigins[0] ?? '',
    RECRUIT_ETL_ENVIRONMENT: 'staging',
    RECRUIT_ETL_LOG_LEVEL: 'info',
    ...extra,
  };
}
