/**
 * A pipeline job: open the warehouse once, record the run in `etl.runs`, walk the stages its
 * command plans (src/pipeline/stages.ts), timing and recording each once, and end the run in
 * one place (src/pipeline/finish.ts); everything is closed in `finally`. The CLI names the
 * command (docs/architecture.md "src/pipeline: the stages as data").
 *
 * @module
 */
import { InterruptedError } from '../errors.js';
import type { Config } from '../config/config.js';
import { type Logger, silentLogger } from '../log/logger.js';
import { Progress } from '../log/progress.js';
import { HttpClient } from '../upstream/http.js';
import { newRunId, RunLog } from '../warehouse/RunLog.js';
import { Warehouse } from '../warehouse/Warehouse.js';
import { settleKeptCopies } from '../warehouse/publishCopy.js';
import { finishFailed, finishSucceeded, type RunState } from './finish.js';
import { planStages, stagesOf, type PipelineCommand, type RunParts, type StageDef, type StageName, type StageOutcome } from './stages.js';

import type { JobContext, JobResult } from './job.js';

export type { JobContext, JobResult, RunFacts } from './job.js';

/**
 * Run the stages `command` plans (src/pipeline/stages.ts `STAGES`) as one recorded run.
 *
 * @throws {EtlError} the first stage failure (after it is recorded in `etl.runs`)
 */
export function runCommand(command: PipelineCommand, ctx: JobContext): Promise<JobResult> {
  return runJob(command, stagesOf(command), ctx);
}

/** The run's HTTP client: its retry, body and size limits, and the run's deadline from now (`--deadline`). */
function newHttpClient(config: Config, logger: Logger): HttpClient {
  return new HttpClient({
    logger,
    policy: {
      maxRetryAfterMs: config.maxRetryAfter * 1000,
      bodyTotalTimeoutMs: config.bodyTimeout * 1000,
      maxResponseBytes: config.maxPageBytes,
      ...(config.deadline !== undefined ? { deadlineMs: Date.now() + config.deadline * 1000 } : {}),
    },
  });
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (!signal?.aborted) return;
  const reason: unknown = signal.reason;
  throw reason instanceof InterruptedError ? reason : new InterruptedError('SIGTERM');
}

/** Run one stage with its progress reporter, recording its wall time and counts (`failed` when it throws). */
async function runStage(def: StageDef, sctx: RunParts, run: RunState): Promise<void> {
  const p = run.progress.start(def.name);
  const t0 = Date.now();
  let outcome: StageOutcome | undefined;
  try {
    outcome = await def.run({ ...sctx, progress: p });
  } finally {
    p.end();
    run.result.stages[def.name] = { durationMs: Date.now() - t0, ...(outcome ? outcome.counts : { failed: true }) };
  }
  Object.assign(run.result, outcome.results);
}

/**
 * Walk the plan. The signal is checked between stages: after each stage but `publish`, and
 * before the first when it is not `extract` (whose own reads watch the signal). The stages'
 * warm-ups start once the stages that talk HTTP are done.
 */
async function walk(run: RunState, sctx: RunParts): Promise<void> {
  for (const [i, def] of run.plan.entries()) {
    if (i > 0 || def.name !== 'extract') throwIfAborted(sctx.signal);
    if (!def.http) for (const later of run.plan) later.warmUp?.(sctx);
    await runStage(def, sctx, run);
  }
  if (run.plan.at(-1)?.name !== 'publish') throwIfAborted(sctx.signal);
}

/**
 * Run the `names` stages that `command` runs (their conditions checked against the config), in
 * pipeline order, as one recorded run. Before the run is recorded, a published copy a killed
 * run left in place is settled (`settleKeptCopies`, docs/contracts.md "Guarantees", 2).
 *
 * @param command the CLI command name recorded in `etl.runs`
 * @throws {EtlError} the first stage failure (after it is recorded in `etl.runs`)
 */
export async function runJob(command: string, names: readonly StageName[], ctx: JobContext): Promise<JobResult> {
  const { config } = ctx;
  const logger = ctx.logger ?? silentLogger();
  const plan = planStages(command, names, config, logger);
  const started = Date.now();
  const result: JobResult = { runId: newRunId(), command, durationMs: 0, stages: {} };
  const progress = ctx.progress ?? new Progress({ logger, intervalSeconds: config.progressInterval });
  const wh = await Warehouse.open(config.db, { memoryLimit: config.memoryLimit, logger });
  const sctx: RunParts = { config, logger, wh, runId: result.runId, tally: { pages: 0 }, warm: {} };
  try {
    await wh.migrate();
    // Before anything is recorded: the published copy must not call a killed run succeeded.
    await settleKeptCopies(wh);
    const run: RunState = { ctx, logger, wh, runLog: new RunLog(wh, ctx.secrets), progress, plan, started, result };
    await run.runLog.start(result.runId, command, config.environment);
    logger.info({ runId: result.runId, command, stages: plan.map((s) => s.name) }, 'run started');
    try {
      sctx.http = ctx.http ?? (plan.some((s) => s.http) ? newHttpClient(config, logger) : undefined);
      Object.assign(sctx, ctx.signal ? { signal: ctx.signal } : {}, ctx.secrets ? { secrets: ctx.secrets } : {});
      await walk(run, sctx);
      return await finishSucceeded(run);
    } catch (err) {
      throw await finishFailed(run, err, sctx);
    }
  } finally {
    if (ctx.http === undefined && sctx.http) await sctx.http.close();
    await wh.close();
  }
}
