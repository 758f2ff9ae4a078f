/**
 * `recruit-etl status`: streams, cursor age, last runs, row counts, and the funnel per
 * trial when the models exist. `--json` prints the same as one JSON document.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { statusJob } from '../../pipeline/jobs.js';
import { prepare, type CliContext } from '../context.js';
import { formatStatus } from '../formatStatus.js';
import { commandOptions } from '../options.js';

/** The yargs module of `status`. */
export function statusCommand(ctx: CliContext): CommandModule {
  return {
    command: 'status',
    describe: 'streams, cursors, last runs, row counts and the funnel per trial',
    builder: (y: Argv) => commandOptions(y, 'status'),
    handler: async (argv: Record<string, unknown>) => {
      const { config } = prepare(ctx, 'status', argv, []);
      const status = await statusJob(config);
      ctx.stdout.write(config.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
    },
  };
}
