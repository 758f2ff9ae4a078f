/**
 * `recruit-etl streams`: list the streams with their origin, position, cursor, transformed
 * position and status; `recruit-etl streams reset <stream-id>` starts one again from the first
 * page; `recruit-etl streams retire <stream-id> [--yes]` retires one (docs/contracts.md
 * "Streams"). Parsing only; the work is in src/pipeline/jobs.ts and streamJobs.ts.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { resetStreamJob, statusJob } from '../../pipeline/jobs.js';
import { retireStreamJob } from '../../pipeline/streamJobs.js';
import { prepare, type CliContext } from '../context.js';
import { formatStreams } from '../formatStatus.js';
import { commandOptions } from '../options.js';

/** The yargs module of `streams`. */
export function streamsCommand(ctx: CliContext): CommandModule {
  return {
    command: 'streams [action] [stream-id]',
    describe:
      'list the streams (origin, position, cursor, transformed position, status); `streams reset <stream-id>` starts one again from the first page; `streams retire <stream-id>` retires one (--yes if it has received pages)',
    builder: (y: Argv) =>
      commandOptions(y, 'streams')
        .positional('action', {
          type: 'string',
          choices: ['list', 'reset', 'retire'],
          default: 'list',
          describe: 'list (default), reset or retire',
        })
        .positional('stream-id', { type: 'string', describe: 'the stream to start again (reset) or to retire (retire)' }),
    handler: async (argv: Record<string, unknown>) => {
      const { action, streamId, 'stream-id': _sid, ...rest } = argv;
      void _sid;
      const { config, logger } = prepare(ctx, 'streams', rest, []);
      if (action === 'reset' || action === 'retire') {
        if (typeof streamId !== 'string' || streamId === '') {
          throw new ConfigError(`streams ${action} needs the id of the stream`, { hint: 'list them with `recruit-etl streams`' });
        }
        const line =
          action === 'reset' ? await resetStreamJob(config, streamId, logger) : await retireStreamJob(config, streamId, config.yes, logger);
        ctx.stdout.write(config.json ? `${JSON.stringify(line, null, 2)}\n` : `${formatStreams([line])}\n`);
        return;
      }
      const status = await statusJob(config);
      if (status.warning) ctx.stderr.write(`recruit-etl: warning: ${status.warning}\n`);
      ctx.stdout.write(config.json ? `${JSON.stringify(status.streams, null, 2)}\n` : `${formatStreams(status.streams)}\n`);
    },
  };
}
