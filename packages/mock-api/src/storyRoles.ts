/**
 * The edge cases of the story data set: roles forced onto some patients of every trial so
 * that even small data sets hold each edge case the models must handle (docs/models.md);
 * the ground truth recomputes them from the stream (truth.ts).
 *
 * @module
 */
import type { Rng } from './prng.js';

/** An edge-case role; patients without one follow the natural funnel. */
export type Role =
  | 'late'
  | 'regression'
  | 'regressionPre'
  | 'repeated'
  | 'orphan'
  | 'unknownStatus'
  | 'unknownOutcome'
  | 'bothSpellings'
  | 'duplicateDelivery'
  | 'severalSites';

/** Forced edge-case roles per trial, assigned round-robin (so small trials still get one of each). */
export const ROLE_PLAN: ReadonlyArray<readonly [Role, number]> = [
  ['late', 3],
  ['regression', 2],
  ['regressionPre', 1],
  ['repeated', 3],
  ['orphan', 3],
  ['unknownStatus', 3],
  ['unknownOutcome', 3],
  ['bothSpellings', 3],
  ['duplicateDelivery', 3],
  ['severalSites', 3],
];

/**
 * Assigns the roles of {@link ROLE_PLAN} to random patients of a trial (`severalSites`
 * only when the trial has two sites or more).
 *
 * @returns one entry per patient, `undefined` for the natural ones
 */
export function assignRoles(rng: Rng, patients: number, sites: number): Array<Role | undefined> {
  const roles: Array<Role | undefined> = new Array<Role | undefined>(patients).fill(undefined);
  const order = rng.shuffle(Array.from({ length: patients }, (_, i) => i));
  const queue: Role[] = [];
  const max = Math.max(...ROLE_PLAN.map(([, n]) => n));
  for (let round = 0; round < max; round++) {
    for (const [role, n] of ROLE_PLAN) {
      if (round < n && !(role === 'severalSites' && sites < 2)) queue.push(role);
    }
  }
  for (let i = 0; i < queue.length && i < order.length; i++) roles[order[i]!] = queue[i];
  return roles;
}

/** Roles whose status history needs the patient reached by a call. */
export const forcesReach = (role: Role | undefined): boolean =>
  role === 'late' || role === 'regression' || role === 'regressionPre' || role === 'repeated' || role === 'unknownStatus';

/** The fewest contact attempts a role needs. */
export const minAttemptsOf = (role: Role | undefined): number =>
  role === 'orphan' || role === 'duplicateDelivery'
    ? 1
    : role === 'unknownOutcome' || role === 'bothSpellings' || role === 'severalSites'
      ? 2
      : 0;
