import { describe, expect, test } from 'vitest';
import { TransformError } from '../../../src/errors.js';
import { orderModels } from '../../../src/transform/orderModels.js';

const m = (name: string, ...refs: string[]) => ({ name, refs });

describe('orderModels', () => {
  test('dependencies first, ties alphabetical, seeds external', () => {
    const out = orderModels([m('fct', 'int_b', 'stg_a'), m('int_b', 'stg_a', 'seed_x'), m('stg_a'), m('dq', 'fct'), m('aaa')], ['seed_x']);
    expect(out.map((x) => x.name)).toEqual(['aaa', 'stg_a', 'int_b', 'fct', 'dq']);
  });

  test('a cycle is a TransformError naming the models in it', () => {
    expect(() => orderModels([m('a', 'b'), m('b', 'c'), m('c', 'a'), m('d')])).toThrow(/cycle.*a, b, c/);
    expect(() => orderModels([m('a', 'a')])).toThrow(TransformError);
  });

  test('unknown refs and duplicate names are refused', () => {
    expect(() => orderModels([m('a', 'nope')])).toThrow(/a refers to nope/);
    expect(() => orderModels([m('a'), m('a')])).toThrow(/two models/);
    expect(() => orderModels([m('seed_x')], ['seed_x'])).toThrow(/name of a seed/);
  });

  test('the real models order without error', async () => {
    const { compileModels } = await import('../../../src/transform/runTransform.js');
    const { MODELS_DIR } = await import('../../../src/paths.js');
    const models = compileModels(MODELS_DIR);
    const order = orderModels(models, [
      'seed_patient_status_stages',
      'seed_contact_outcomes',
      'seed_event_types',
      'seed_site_names',
      'seed_trial_targets',
    ]).map((x) => x.name);
    expect(order.indexOf('stg_events')).toBeLessThan(order.indexOf('fct_patient_funnel'));
    expect(order.indexOf('fct_patient_funnel')).toBeLessThan(order.indexOf('mart_recruitment_funnel'));
    expect(order.at(-1)).not.toBe('stg_events');
  });

  test('layer names tell the build order (docs/models.md "Layers"): stg_ reads one source and nothing else, int_ reads no exported model, exported models no dq_', async () => {
    const { compileModels } = await import('../../../src/transform/runTransform.js');
    const { MODELS_DIR } = await import('../../../src/paths.js');
    const { layerOf } = await import('../../../src/catalog/catalog.js');
    const models = compileModels(MODELS_DIR);
    const rank = { stg: 0, int: 1, fct: 2, dim: 2, mart: 2, dq: 3 } as const;
    const staging = models.filter((x) => layerOf(x.name) === 'stg');
    expect(staging.map((x) => x.name).sort()).toEqual(['stg_events', 'stg_site_snapshots', 'stg_streams']);
    for (const x of staging) {
      expect([x.name, x.refs]).toEqual([x.name, []]);
      expect([x.name, x.sources.length]).toEqual([x.name, 1]);
    }
    let checked = 0;
    for (const x of models) {
      const layer = layerOf(x.name);
      expect(layer, x.name).toBeDefined();
      if (layer !== 'stg' && layer !== 'int') continue;
      for (const r of x.refs.filter((name) => !name.startsWith('seed_'))) {
        expect([x.name, r, rank[layerOf(r)!] <= rank[layer]]).toEqual([x.name, r, true]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
    for (const x of models.filter((y) => rank[layerOf(y.name)!] === 2)) {
      expect(
        x.refs.filter((r) => r.startsWith('dq_')),
        x.name,
      ).toEqual([]);
    }
  });
});
