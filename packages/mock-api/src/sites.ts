/**
 * Sites of the simulated trials: the event-side site ids (`site-…`, carried by events)
 * and the study-website site records (docs/upstream.md "Site list") served by the site list. The two id
 * namespaces differ (docs/upstream.md "Services and identifiers"); `sponsorSiteId` is the shared key (docs/domain.md "Where the events come from").
 *
 * @module
 */
import type { Rng } from './prng.js';
import type { SiteRecord } from './types.js';

/** One site of a trial, both faces. */
export interface TrialSite {
  /** Event-side site id, e.g. `site-7f3a09c1d2e4`. */
  eventSiteId: string;
  /** Sponsor site number, e.g. `US101-003`; on created events and the site record. */
  sponsorSiteId: string;
  /** Relative share of referrals. */
  weight: number;
  /** The study-website record (its `siteId` is a 24-hex id, another namespace). */
  record: SiteRecord;
}

const CITIES: ReadonlyArray<{ city: string; state: string; zip: string; lat: number; lon: number; area: string }> = [
  { city: 'Boston', state: 'MA', zip: '021', lat: 42.3601, lon: -71.0589, area: '617' },
  { city: 'Worcester', state: 'MA', zip: '016', lat: 42.2626, lon: -71.8023, area: '508' },
  { city: 'New Haven', state: 'CT', zip: '065', lat: 41.3083, lon: -72.9279, area: '203' },
  { city: 'Philadelphia', state: 'PA', zip: '191', lat: 39.9526, lon: -75.1652, area: '215' },
  { city: 'Pittsburgh', state: 'PA', zip: '152', lat: 40.4406, lon: -79.9959, area: '412' },
  { city: 'Baltimore', state: 'MD', zip: '212', lat: 39.2904, lon: -76.6122, area: '410' },
  { city: 'Richmond', state: 'VA', zip: '232', lat: 37.5407, lon: -77.436, area: '804' },
  { city: 'Durham', state: 'NC', zip: '277', lat: 35.994, lon: -78.8986, area: '919' },
  { city: 'Atlanta', state: 'GA', zip: '303', lat: 33.749, lon: -84.388, area: '404' },
  { city: 'Tampa', state: 'FL', zip: '336', lat: 27.9506, lon: -82.4572, area: '813' },
  { city: 'Nashville', state: 'TN', zip: '372', lat: 36.1627, lon: -86.7816, area: '615' },
  { city: 'Cleveland', state: 'OH', zip: '441', lat: 41.4993, lon: -81.6944, area: '216' },
  { city: 'Ann Arbor', state: 'MI', zip: '481', lat: 42.2808, lon: -83.743, area: '734' },
  { city: 'Chicago', state: 'IL', zip: '606', lat: 41.8781, lon: -87.6298, area: '312' },
  { city: 'Minneapolis', state: 'MN', zip: '554', lat: 44.9778, lon: -93.265, area: '612' },
  { city: 'St. Louis', state: 'MO', zip: '631', lat: 38.627, lon: -90.1994, area: '314' },
  { city: 'Houston', state: 'TX', zip: '770', lat: 29.7604, lon: -95.3698, area: '713' },
  { city: 'Dallas', state: 'TX', zip: '752', lat: 32.7767, lon: -96.797, area: '214' },
  { city: 'Denver', state: 'CO', zip: '802', lat: 39.7392, lon: -104.9903, area: '303' },
  { city: 'Phoenix', state: 'AZ', zip: '850', lat: 33.4484, lon: -112.074, area: '602' },
  { city: 'Salt Lake City', state: 'UT', zip: '841', lat: 40.7608, lon: -111.891, area: '801' },
  { city: 'San Diego', state: 'CA', zip: '921', lat: 32.7157, lon: -117.1611, area: '619' },
  { city: 'Sacramento', state: 'CA', zip: '958', lat: 38.5816, lon: -121.4944, area: '916' },
  { city: 'Seattle', state: 'WA', zip: '981', lat: 47.6062, lon: -122.3321, area: '206' },
];

const ORG_HEADS = [
  'Lakeside',
  'Northwind',
  'Summit',
  'Harborview',
  'Riverbend',
  'Cedar Ridge',
  'Bayview',
  'Pinecrest',
  'Meridian',
  'Granite State',
  'Prairie',
  'Coastal',
];
const ORG_TAILS = [
  'Clinical Research',
  'Medical Center',
  'Research Institute',
  'Health Research',
  'Clinical Trials Unit',
  'Neurology Associates',
  'Family Medicine',
];
const STREETS = [
  'Medical Center Dr',
  'Harbor Blvd',
  'Research Pkwy',
  'Main St',
  'Elm St',
  'University Ave',
  'Park Ave',
  'Commerce Way',
  'Hospital Rd',
  'Lincoln Ave',
  'Washington St',
  'Oak Grove Rd',
];
const SUITES = ['Suite 100', 'Suite 210', 'Suite 300', 'Floor 4', 'Building B', 'Suite 1450', 'Unit 12'];

/**
 * Generates `count` sites for trial number `trialNumber` (1-based). Every trial with at
 * least two sites gets at least one record with `address2: null` and one with a value.
 */
export function generateTrialSites(rng: Rng, trialNumber: number, count: number): TrialSite[] {
  const sites: TrialSite[] = [];
  const cities = rng.shuffle([...CITIES]);
  for (let s = 0; s < count; s++) {
    const c = cities[s % cities.length]!;
    const name = `${rng.pick(ORG_HEADS)} ${rng.pick(ORG_TAILS)}`;
    const street = `${rng.int(10, 9800)} ${rng.pick(STREETS)}`;
    const address2 = s === 0 ? null : s === 1 ? rng.pick(SUITES) : rng.chance(0.5) ? rng.pick(SUITES) : null;
    const sponsorSiteId = `US${100 + trialNumber}-${String(s + 1).padStart(3, '0')}`;
    const record: SiteRecord = {
      siteId: rng.hex(24),
      displayName: `${name} (${c.city}, ${c.state})`,
      siteName: `${name} - ${c.city}`,
      sponsorSiteId,
      street,
      address1: street,
      address2,
      city: c.city,
      state: c.state,
      postalCode: `${c.zip}${String(rng.int(1, 99)).padStart(2, '0')}`,
      country: 'US',
      phoneNumber: `+1 ${c.area}-555-${String(rng.int(100, 199)).padStart(4, '0')}`,
      latitude: Math.round((c.lat + rng.between(-0.05, 0.05)) * 1e6) / 1e6,
      longitude: Math.round((c.lon + rng.between(-0.05, 0.05)) * 1e6) / 1e6,
    };
    sites.push({ eventSiteId: `site-${rng.hex(12)}`, sponsorSiteId, weight: rng.between(0.5, 2), record });
  }
  return sites;
}

/** Trial id of 1-based trial number `n`: `TRIAL-001`, `TRIAL-002`, … */
export function trialIdOf(n: number): string {
  return `TRIAL-${String(n).padStart(3, '0')}`;
}
