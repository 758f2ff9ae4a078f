/**
 * `recruit-etl mock-api`: serve the simulator of the upstream API on a local port until
 * SIGINT / SIGTERM. Prints one JSON line with the URLs and the settings a client needs.
 *
 * @module
 */
import type { Argv, CommandModule, Options } from 'yargs';
import { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, mockApiOptionsFromFlags, startMockApi, type MockApiFlagValues } from '../../simulator/index.js';
import { createLogger } from '../../log/logger.js';
import type { CliContext } from '../context.js';

/** Options already declared for every command (same meaning here: what the simulator accepts). */
const SHARED = new Set(['client-id', 'client-secret', 'audience', 'microsite-id']);

/**
 * The yargs module of `mock-api`: its flags are derived from the simulator's option schema
 * (`MOCK_API_FLAGS`), so every flag is also `RECRUIT_ETL_<FLAG>` through the CLI's `.env()`.
 */
export function mockApiCommand(ctx: CliContext): CommandModule {
  return {
    command: 'mock-api',
    describe: 'serve the simulator of the upstream API (token, events, site list) on a local port',
    builder: (y: Argv) => {
      // The command's own port default (the demo's); startMockApi's is 0.
      let b = y.option('port', { type: 'number', default: 8787, describe: 'TCP port (0 = any free port)' });
      for (const f of MOCK_API_FLAGS) {
        const name = f.flag.replace(/^--/, '');
        if (name === 'port' || SHARED.has(name)) continue;
        const opt: Options = { describe: f.default === undefined ? f.description : `${f.description} (default ${String(f.default)})` };
        if (f.type === 'array') {
          opt.type = 'string';
          opt.array = true;
        } else {
          opt.type = f.type;
        }
        b = b.option(name, opt);
      }
      return b
        .group(
          MOCK_API_FLAGS.map((f) => f.flag.replace(/^--/, '')).filter((n) => !SHARED.has(n)),
          'Simulator:',
        )
        .epilogue(MOCK_API_FAULT_HELP);
    },
    handler: async (argv: Record<string, unknown>) => {
      const logger = createLogger({ level: String(argv['logLevel'] ?? 'info') });
      const flags: Record<string, unknown> = {};
      for (const f of MOCK_API_FLAGS) if (argv[f.key] !== undefined) flags[f.key] = argv[f.key];
      const api = await startMockApi({ ...mockApiOptionsFromFlags(flags as MockApiFlagValues), logger });
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
