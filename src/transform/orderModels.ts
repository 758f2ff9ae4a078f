/**
 * Order models by their `ref()`s so that each is built after everything it reads.
 *
 * @module
 */
import { TransformError } from '../errors.js';

/** The part of a model that ordering needs. */
export interface ModelNode {
  name: string;
  refs: readonly string[];
}

/**
 * Topological order of `models` (Kahn's algorithm; among ready models, alphabetical, so
 * the order is deterministic). Refs to names in `external` (seeds) are satisfied up front.
 *
 * @param models the models to order; names must be unique
 * @param external names that exist before any model is built (seeds)
 * @returns the same models, dependencies first
 * @throws {TransformError} on a duplicate name, a ref to an unknown name, or a cycle (named)
 */
export function orderModels<T extends ModelNode>(models: readonly T[], external: Iterable<string> = []): T[] {
  const byName = new Map<string, T>();
  const ext = new Set(external);
  for (const m of models) {
    if (byName.has(m.name)) throw new TransformError(`two models are named ${m.name}`);
    if (ext.has(m.name)) throw new TransformError(`model ${m.name} has the name of a seed`);
    byName.set(m.name, m);
  }
  const pending = new Map<string, Set<string>>();
  const dependents = new Map<string, string[]>();
  for (const m of models) {
    const deps = new Set<string>();
    for (const ref of m.refs) {
      if (ext.has(ref)) continue;
      if (!byName.has(ref)) throw new TransformError(`model ${m.name} refers to ${ref}, which is neither a model nor a seed`);
      if (ref === m.name) throw new TransformError(`model ${m.name} refers to itself`);
      deps.add(ref);
      const list = dependents.get(ref) ?? [];
      list.push(m.name);
      dependents.set(ref, list);
    }
    pending.set(m.name, deps);
  }
  const ready = [...pending]
    .filter(([, d]) => d.size === 0)
    .map(([n]) => n)
    .sort();
  const out: T[] = [];
  while (ready.length > 0) {
    const name = ready.shift() as string;
    out.push(byName.get(name) as T);
    for (const dep of dependents.get(name) ?? []) {
      const deps = pending.get(dep) as Set<string>;
      deps.delete(name);
      if (deps.size === 0) {
        ready.push(dep);
        ready.sort();
      }
    }
    pending.delete(name);
  }
  if (out.length < models.length) {
    const stuck = [...pending.keys()].sort();
    throw new TransformError(`the models form a cycle through their refs: ${stuck.join(', ')}`);
  }
  return out;
}
