/**
 * A seeded synthetic world of trials that recruit as the Poisson-gamma model says
 * (docs/models.md "Enrolment forecast", "Calibration"): per trial 5–40 sites whose daily
 * enrolment rates are drawn from a Gamma of shape 1–5, activated at different times; each site
 * receives referrals as a Poisson process, a share of which enrol after a lag. Returns the
 * patients referred up to the as-of time (the forecast's input) and what happened after it.
 */
import { seededRandom as mulberry32 } from './crash.js';

function normal(u: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
}

/** A Gamma(shape, 1) draw (Marsaglia & Tsang; shape < 1 by the boost u^(1/shape)). */
export function gammaDraw(u: () => number, shape: number): number {
  if (shape < 1) return gammaDraw(u, shape + 1) * Math.pow(1 - u(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = normal(u);
    const v = Math.pow(1 + c * x, 3);
    if (v <= 0) continue;
    if (Math.log(1 - u()) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** One referred patient up to the as-of time: days relative to it (negative: before). */
export interface WorldPatient {
  trial: string;
  site: string;
  referralDay: number;
  /** Null when the patient never enrols. */
  enrolledDay: number | null;
}

/** One trial's truth. */
export interface WorldTrial {
  trial: string;
  /** The sites' true enrolment rates, per day. */
  siteRates: Map<string, number>;
  /** Enrolled by day 0. */
  enrolledToDate: number;
  /** Enrolments in (0, 91] days at the sites. */
  enrolledNext91d: number;
  /** Day (after 0) of each future enrolment, sorted, up to the horizon. */
  futureEnrolmentDays: number[];
  target: number;
  /** Days after day 0 of the target date (its end). */
  targetDay: number;
}

const HORIZON_DAYS = 3000;
const CONVERSION = 0.4;

function lag(u: () => number): number {
  return 5 + 12 * gammaDraw(u, 2);
}

function poissonTimes(u: () => number, rate: number, from: number, to: number): number[] {
  const times: number[] = [];
  for (let t = from - Math.log(1 - u()) / rate; t < to; t -= Math.log(1 - u()) / rate) times.push(t);
  return times;
}

/** Simulate one site: the patients referred by day 0 and the future enrolment days. */
function simulateSite(
  u: () => number,
  trial: string,
  site: string,
  rate: number,
  activatedDay: number,
  patients: WorldPatient[],
): { referred: number; past: number; future: number[] } {
  let past = 0;
  let referred = 0;
  const future: number[] = [];
  for (const referralDay of poissonTimes(u, rate / CONVERSION, activatedDay, HORIZON_DAYS)) {
    const enrolledDay = u() < CONVERSION ? referralDay + lag(u) : null;
    if (referralDay <= 0) {
      patients.push({ trial, site, referralDay, enrolledDay });
      referred++;
    }
    if (enrolledDay === null) continue;
    if (enrolledDay <= 0) past++;
    else future.push(enrolledDay);
  }
  return { referred, past, future };
}

/** `trialCount` trials of the seeded world. */
export function forecastWorld(seed: number, trialCount: number): { trials: WorldTrial[]; patients: WorldPatient[] } {
  const u = mulberry32(seed);
  const trials: WorldTrial[] = [];
  const patients: WorldPatient[] = [];
  for (let t = 0; t < trialCount; t++) {
    const trial = `T${String(t).padStart(4, '0')}`;
    const siteCount = 5 + Math.floor(u() * 36);
    const shape = 1 + 4 * u();
    const meanRate = (0.5 + 2.5 * u()) / 30;
    const siteRates = new Map<string, number>();
    let enrolledToDate = 0;
    const future: number[] = [];
    for (let s = 0; s < siteCount; s++) {
      const site = `S${s}`;
      const rate = (gammaDraw(u, shape) * meanRate) / shape;
      const activatedDay = -(60 + u() * 480);
      const sim = simulateSite(u, trial, site, rate, activatedDay, patients);
      if (sim.referred === 0) continue; // not active today: no referral yet
      siteRates.set(site, rate);
      enrolledToDate += sim.past;
      future.push(...sim.future);
    }
    future.sort((a, b) => a - b);
    const totalRate = [...siteRates.values()].reduce((a, b) => a + b, 0);
    const remaining = Math.max(1, Math.round(totalRate * (60 + u() * 500)));
    trials.push({
      trial,
      siteRates,
      enrolledToDate,
      enrolledNext91d: future.filter((d) => d <= 91).length,
      futureEnrolmentDays: future,
      target: enrolledToDate + remaining,
      // around the day the target is expected: probabilities over the whole of (0, 1)
      targetDay: Math.max(1, Math.round((remaining / totalRate) * (0.6 + 0.8 * u()))),
    });
  }
  return { trials, patients };
}
