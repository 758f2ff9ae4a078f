/**
 * `recruit-etl mock-api`: serve the simulator of the upstream API on a local port until
 * SIGINT / SIGTERM. Prints one JSON line with the URLs and the settings a client needs.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { MOCK_API_FAULT_HELP, MOCK_API_FLAGS, mockApiOptionsFromFlags, type MockApiFlagValues } from '../../simulator/mockApiFlags.js';
import { coerceOptions, envName, optionsFor, resolveConfig, type Config, type OptionSpec } from '../../config/config.js';
import { createLogger } from '../../log/logger.js';
import { ConfigError } from '../../errors.js';
import { gather, warnUnknownVariables, type CliContext } from '../context.js';
import { declareOptions, HELP_EPILOGUE } from '../options.js';

/** The command's own port default (the demo's); startMockApi's is 0. */
const DEFAULT_PORT = 8787;

/**
 * The simulator's flags (`MOCK_API_FLAGS`, derived from its option schema) as options of this
 * command: each is also `RECRUIT_ETL_<FLAG>` and a key of the `--config` file, like every option.
 */
const SIMULATOR_OPTIONS: readonly OptionSpec[] = MOCK_API_FLAGS.map((f) => {
  const spec: OptionSpec = {
    key: f.key,
    flag: f.flag.slice(2),
    env: envName(f.key),
    type: f.type === 'array' ? 'string' : f.type,
    array: f.type === 'array',
    describe: f.description,
    commands: ['mock-api'],
    group: 'Simulator:',
    hidden: false,
  };
  const def = f.key === 'port' ? DEFAULT_PORT : f.default;
  if (def !== undefined) spec.defaultHelp = String(def);
  return spec;
});

/**
 * The simulator's flag values of one invocation, by precedence (flags > `RECRUIT_ETL_*` >
 * `--config` file > defaults), for `mockApiOptionsFromFlags`.
 *
 * @throws {ConfigError} an invalid `--config` file or log level (exit 2)
 */
export function mockApiValues(ctx: CliContext, argv: Record<string, unknown>): { flags: MockApiFlagValues; logLevel: Config['logLevel']; unknownVariables: string[] } {
  const { raw, unknownVariables } = gather(ctx, argv, [...optionsFor('mock-api'), ...SIMULATOR_OPTIONS]);
  coerceOptions(SIMULATOR_OPTIONS.filter((s) => !s.array), raw); // lists: the simulator splits its own
  const config = resolveConfig(raw);
  const flags: Record<string, unknown> = { port: DEFAULT_PORT };
  for (const f of MOCK_API_FLAGS) if (raw[f.key] !== undefined) flags[f.key] = raw[f.key];
  return { flags: flags as MockApiFlagValues, logLevel: config.logLevel, unknownVariables };
}

/** The yargs module of `mock-api`. */
export function mockApiCommand(ctx: CliContext): CommandModule {
  return {
    command: 'mock-api',
    describe: 'serve the simulator of the upstream API (token, events, site list) on a local port',
    builder: (y: Argv) =>
      declareOptions(y, [...optionsFor('mock-api'), ...SIMULATOR_OPTIONS])
        .group(
          SIMULATOR_OPTIONS.map((s) => s.flag),
          'Simulator:',
        )
        .epilogue(`${MOCK_API_FAULT_HELP}\n\n${HELP_EPILOGUE}`),
    handler: async (argv: Record<string, unknown>) => {
      const { flags, logLevel, unknownVariables } = mockApiValues(ctx, argv);
      const logger = createLogger({ level: logLevel });
      warnUnknownVariables(logger, unknownVariables);
      const options = mockApiOptionsFromFlags(flags);
      // Loaded here: the simulator's code costs every other command memory at start-up.
      const { startMockApi } = await import('../../simulator/index.js');
      let api;
      try {
        api = await startMockApi({ ...options, logger });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
        const where = `${options.host ?? '127.0.0.1'}:${String(options.port)}`;
        throw new ConfigError(`--port (RECRUIT_ETL_PORT): ${where} ${code === 'EADDRINUSE' ? 'is already in use' : 'may not be bound by this user'}`, {
          cause: err,
          hint: 'pick another port, or 0 for any free one',
        });
      }
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
