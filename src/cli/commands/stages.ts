/**
 * The pipeline commands: `run`, `extract`, `sites`, `transform`, `export`, `report`
 * (docs/contracts.md "Commands"). Parsing only: the command names its job; the pipeline
 * (src/pipeline/stages.ts) decides which stages it runs and what options they require.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import { Progress, type Terminal } from '../../log/progress.js';
import { runCommand } from '../../pipeline/runJob.js';
import { commandNeeds, type PipelineCommand } from '../../pipeline/stages.js';
import { prepare, type CliContext } from '../context.js';
import { commandOptions } from '../options.js';
import { writeMetrics } from '../metrics.js';

interface StageCommand {
  name: PipelineCommand;
  describe: string;
}

const COMMANDS: StageCommand[] = [
  {
    name: 'run',
    describe:
      'the nightly job: extract → sites → transform → export → report → publish (sites only when --microsite-id is set, publish only when --lake is)',
  },
  {
    name: 'extract',
    describe: 'page every configured stream from its stored cursor into raw.events',
  },
  {
    name: 'sites',
    describe: 'snapshot the study-website site lists into raw.site_snapshots (no token needed)',
  },
  {
    name: 'transform',
    describe: 'build the models of sql/models from the events loaded since the last transform (--full-refresh: from all of raw)',
  },
  {
    name: 'export',
    describe: 'write the marts, dimensions and dq_ results as Parquet with manifest.json',
  },
  {
    name: 'report',
    describe: 'write <export-dir>/report.html: the funnel, site activity, worklist and data quality per trial, from the marts',
  },
  {
    name: 'publish',
    describe:
      'publish the raw events added since the last publish and the changed models into the lake (--lake), in one DuckLake transaction',
  },
];

/** yargs modules of the pipeline commands. */
export function stageCommands(ctx: CliContext): CommandModule[] {
  return COMMANDS.map((c) => ({
    command: c.name,
    describe: c.describe,
    builder: (y: Argv) => commandOptions(y, c.name),
    handler: async (argv: Record<string, unknown>) => {
      const { config, logger, secrets } = prepare(ctx, c.name, argv, (raw) => commandNeeds(c.name, raw));
      // Live progress and the readable summary on stderr when it is a terminal (src/log/progress.ts).
      const terminal = ctx.stderr as Terminal;
      const progress = new Progress({
        logger,
        intervalSeconds: config.progressInterval,
        terminal,
        summaryLine: !((ctx.stdout as Terminal).isTTY === true && terminal.isTTY === true),
      });
      await runCommand(c.name, {
        config,
        logger,
        signal: ctx.signal,
        secrets,
        progress,
        onRecorded: (counts, facts) => {
          if (!ctx.metrics) return;
          ctx.metrics.eventsLoaded = counts.eventsLoaded ?? 0;
          ctx.metrics.stageSeconds = facts.stageSeconds;
          if (facts.warehouse) ctx.metrics.warehouse = facts.warehouse;
        },
        // The metrics file says exit 0 before etl.runs says succeeded; a failure to write it fails the run.
        beforeSucceeded: () => writeMetrics(ctx, 0),
      });
    },
  }));
}
