/**
 * `recruit-etl streams`: list the streams with their position, cursor, transformed position
 * and status; `recruit-etl streams reset <stream-id>` starts one again from the first page
 * (docs/contracts.md "Streams"). Parsing only; the work is in src/pipeline/jobs.ts.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { resetStreamJob, statusJob } from '../../pipeline/jobs.js';
import { prepare, type CliContext } from '../context.js';
import { formatStreams } from '../formatStatus.js';
import { commandOptions } from '../options.js';

/** The yargs module of `streams`. */
export function streamsCommand(ctx: CliContext): CommandModule {
  return {
    command: 'streams [action] [stream-id]',
    describe: 'list the streams (position, cursor, transformed position, status); `streams reset <stream-id>` starts one again from the first page',
    builder: (y: Argv) =>
      commandOptions(y, 'streams')
        .positional('action', { type: 'string', choices: ['list', 'reset'], default: 'list', describe: 'list (default) or reset' })
        .positional('stream-id', { type: 'string', describe: 'the stream to start again (reset)' }),
    handler: async (argv: Record<string, unknown>) => {
      const { action, streamId, 'stream-id': _sid, ...rest } = argv;
      void _sid;
      const { config, logger } = prepare(ctx, 'streams', rest, []);
      if (action === 'reset') {
        if (typeof streamId !== 'string' || streamId === '') {
          throw new ConfigError('streams reset needs the id of the stream to start again', { hint: 'list them with `recruit-etl streams`' });
        }
        const line = await resetStreamJob(config, streamId, logger);
        ctx.stdout.write(config.json ? `${JSON.stringify(line, null, 2)}\n` : `${formatStreams([line])}\n`);
        return;
      }
      const status = await statusJob(config);
      ctx.stdout.write(config.json ? `${JSON.stringify(status.streams, null, 2)}\n` : `${formatStreams(status.streams)}\n`);
    },
  };
}
