/**
 * The pipeline commands: `run`, `extract`, `sites`, `transform`, `export`, `report`
 * (docs/contracts.md "Commands"). Parsing only; the work is `runJob`.
 *
 * @module
 */
import type { Argv, CommandModule } from 'yargs';
import type { CommandName, Need } from '../../config/config.js';
import { Progress, type Terminal } from '../../log/progress.js';
import { runJob, type Stage } from '../../pipeline/jobs.js';
import { prepare, type CliContext } from '../context.js';
import { commandOptions } from '../options.js';
import { writeMetrics } from '../metrics.js';

interface StageCommand {
  name: CommandName;
  describe: string;
  stages: Stage[];
  needs: Need[];
}

const COMMANDS: StageCommand[] = [
  {
    name: 'run',
    describe: 'the nightly job: extract → sites → transform → export → report → publish (sites only when --microsite-id is set, publish only when --lake is)',
    stages: ['extract', 'sites', 'transform', 'export', 'report', 'publish'],
    needs: ['events'],
  },
  {
    name: 'extract',
    describe: 'page every configured stream from its stored cursor into raw.events',
    stages: ['extract'],
    needs: ['events'],
  },
  {
    name: 'sites',
    describe: 'snapshot the study-website site lists into raw.site_snapshots (no token needed)',
    stages: ['sites'],
    needs: ['sites'],
  },
  {
    name: 'transform',
    describe: 'build the models of sql/models from the events loaded since the last transform (--full-refresh: from all of raw)',
    stages: ['transform'],
    needs: [],
  },
  {
    name: 'export',
    describe: 'write the marts, dimensions and dq_ results as Parquet with manifest.json',
    stages: ['export'],
    needs: [],
  },
  {
    name: 'report',
    describe: 'write <export-dir>/report.html: the funnel, site activity, worklist and data quality per trial, from the marts',
    stages: ['report'],
    needs: [],
  },
  {
    name: 'publish',
    describe: 'publish the raw events added since the last publish and the changed models into the lake (--lake), in one DuckLake transaction',
    stages: ['publish'],
    needs: ['lake'],
  },
];

/** yargs modules of the pipeline commands. */
export function stageCommands(ctx: CliContext): CommandModule[] {
  return COMMANDS.map((c) => ({
    command: c.name,
    describe: c.describe,
    builder: (y: Argv) => commandOptions(y, c.name),
    handler: async (argv: Record<string, unknown>) => {
      let stages = c.stages;
      // `run` snapshots the site list when a microsite id is configured, and then needs its options.
      const needs = (raw: Record<string, unknown>): Need[] => (c.name === 'run' && raw['micrositeId'] !== undefined ? [...c.needs, 'sites'] : c.needs);
      const { config, logger, secrets } = prepare(ctx, c.name, argv, needs);
      if (c.name === 'run' && config.micrositeId === undefined) stages = stages.filter((s) => s !== 'sites');
      if (c.name === 'run' && !stages.includes('sites')) logger.info({}, 'sites skipped: no --microsite-id configured');
      if (c.name === 'run' && config.lake === undefined) stages = stages.filter((s) => s !== 'publish');
      // Live progress and the readable summary on stderr when it is a terminal (src/log/progress.ts).
      const terminal = ctx.stderr as Terminal;
      const progress = new Progress({
        logger,
        intervalSeconds: config.progressInterval,
        terminal,
        summaryLine: !((ctx.stdout as Terminal).isTTY === true && terminal.isTTY === true),
      });
      await runJob(c.name, stages, {
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
