/**
 * The stage table decides what each command runs (docs/architecture.md "src/pipeline: the
 * stages as data"): `run` runs every stage in pipeline order, sites only with a microsite id
 * and publish only with a lake; each other command its own stage, whose options it requires.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { resolveConfig } from '../../../src/config/config.js';
import { createLogger } from '../../../src/log/logger.js';
import { commandNeeds, planStages, STAGES, stagesOf, type PipelineCommand } from '../../../src/pipeline/stages.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      cb();
    },
  });
  return { logger: createLogger({ destination, level: 'info' }), lines };
}

const ALL = ['extract', 'sites', 'transform', 'export', 'report', 'publish'];

describe('the stage table', () => {
  it('lists the stages in pipeline order; run runs them all, each other command its own', () => {
    expect(STAGES.map((s) => s.name)).toEqual(ALL);
    expect(stagesOf('run')).toEqual(ALL);
    for (const c of ALL) expect(stagesOf(c as PipelineCommand)).toEqual([c]);
  });

  it('requires the options of the stages a command runs, run the sites options only with a microsite id', () => {
    expect(commandNeeds('run', {})).toEqual(['events']);
    expect(commandNeeds('run', { micrositeId: 'ms-1' })).toEqual(['events', 'sites']);
    expect(commandNeeds('extract', {})).toEqual(['events']);
    expect(commandNeeds('sites', {})).toEqual(['sites']);
    expect(commandNeeds('publish', {})).toEqual(['lake']);
    for (const c of ['transform', 'export', 'report'] as const) expect(commandNeeds(c, {})).toEqual([]);
  });

  it('plans run without sites and publish when their options are unset, and says why sites was skipped', () => {
    const { logger, lines } = capture();
    const plain = resolveConfig({}, []);
    expect(planStages('run', stagesOf('run'), plain, logger).map((s) => s.name)).toEqual(['extract', 'transform', 'export', 'report']);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['sites skipped: no --microsite-id configured']);
    const full = resolveConfig({ micrositeId: 'ms-1', lake: 'ducklake:lake.ducklake' }, []);
    expect(planStages('run', stagesOf('run'), full, logger).map((s) => s.name)).toEqual(ALL);
    expect(lines).toHaveLength(1);
  });

  it("plans a stage's own command without its condition (the command requires the option instead)", () => {
    const { logger, lines } = capture();
    const plain = resolveConfig({}, []);
    expect(planStages('sites', ['sites'], plain, logger).map((s) => s.name)).toEqual(['sites']);
    expect(planStages('publish', ['publish'], plain, logger).map((s) => s.name)).toEqual(['publish']);
    expect(lines).toEqual([]);
  });

  it('refreshes the published copy only for stages that change data, and builds an HTTP client only for those that talk to the API', () => {
    expect(STAGES.filter((s) => s.writes).map((s) => s.name)).toEqual(['extract', 'sites', 'transform']);
    expect(STAGES.filter((s) => s.http).map((s) => s.name)).toEqual(['extract', 'sites']);
  });
});
