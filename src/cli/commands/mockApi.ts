/**
 * `recruit-etl mock-api`: serve the simulator of the upstream API on a local port until
 * SIGINT / SIGTERM. Prints one line with the URLs and credentials to use.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { parseFaultSpec, startMockApi, type MockApiOptions } from '../../simulator/index.js';
import { createLogger } from '../../log/logger.js';
import type { CliContext } from '../context.js';

/** The yargs module of `mock-api`. */
export function mockApiCommand(ctx: CliContext): CommandModule {
  return {
    command: 'mock-api',
    describe: 'serve the simulator of the upstream API (token, events, site list) on a local port',
    builder: (y: Argv) =>
      y
        .option('host', { type: 'string', default: '127.0.0.1', describe: 'interface to listen on' })
        .option('port', { type: 'number', default: 8787, describe: 'port (0: any free port)' })
        .option('seed', { type: 'number', default: 1, describe: 'data seed (same seed, same data)' })
        .option('trials', { type: 'number', default: 2, describe: 'trials to generate' })
        .option('sites-per-trial', { type: 'number', default: 4, describe: 'sites per trial' })
        .option('patients-per-trial', { type: 'number', default: 150, describe: 'patients per trial' })
        .option('token-lifetime', { type: 'number', default: 3600, describe: 'token lifetime, seconds (expires_in)' })
        .option('release-fraction', { type: 'number', default: 1, describe: 'share of the stream visible at start (0..1)' })
        .option('grow-every-ms', { type: 'number', describe: 'release more events every N ms' })
        .option('grow-events', { type: 'number', default: 50, describe: 'events released per growth step' })
        .option('synthetic-events', { type: 'number', describe: 'serve N pre-rendered synthetic events instead of the story data (benchmark)' })
        .option('drift', { type: 'boolean', default: true, describe: "the spec's drift: `name` keys, unknown fields and values, v2 types" })
        .option('fault', { type: 'string', array: true, describe: 'inject a fault (repeatable), e.g. events:status=503:times=3' }),
    handler: async (argv: Record<string, unknown>) => {
      const logger = createLogger({ level: String(argv['logLevel'] ?? 'info') });
      const options: MockApiOptions = {
        host: String(argv['host']),
        port: Number(argv['port']),
        seed: Number(argv['seed']),
        trials: Number(argv['trials']),
        sitesPerTrial: Number(argv['sitesPerTrial']),
        patientsPerTrial: Number(argv['patientsPerTrial']),
        tokenLifetimeSeconds: Number(argv['tokenLifetime']),
        releaseFraction: Number(argv['releaseFraction']),
        drift: argv['drift'] !== false,
        logger,
      };
      if (argv['growEveryMs'] !== undefined) {
        options.growEvery = { intervalMs: Number(argv['growEveryMs']), events: Number(argv['growEvents']) };
      }
      if (argv['syntheticEvents'] !== undefined) options.syntheticEvents = Number(argv['syntheticEvents']);
      const api = await startMockApi(options);
      for (const spec of (argv['fault'] as string[] | undefined) ?? []) api.faults.add(parseFaultSpec(spec));
      ctx.stdout.write(
        `${JSON.stringify({
          mockApi: 'listening',
          baseUrl: api.baseUrl,
          authUrl: api.authUrl,
          clientId: api.options.clientId,
          audience: api.options.audience,
          micrositeId: api.options.micrositeId,
          origin: api.options.allowedOrigins[0],
          trialIds: api.truth.trialIds,
          events: api.truth.visibleCount(),
        })}\n`,
      );
      await new Promise<void>((resolve) => {
        if (ctx.signal.aborted) resolve();
        ctx.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      await api.close();
    },
  };
}
