/**
 * Events and an operator CSV whose text is markup, where the report shows data: trial id,
 * site ids, site names, a status, an outcome, an event type (docs/security.md "The report").
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { attempt, created, status, type Ev } from '../models/fixture.js';

/** Markup where the data goes: trial id, site ids, a site name, a status, an event type. */
export const HOSTILE_TRIAL = '"><img src=x onerror=alert(1)>';
export const HOSTILE_SITE = '<script>alert(1)</script>';
export const HOSTILE_NAME = '</title><script>alert("name")</script>';
export const HOSTILE_EVENTS: Ev[] = [
  created('h01', HOSTILE_TRIAL, 'hs1', HOSTILE_SITE, '2024-03-01T10:00:00Z', '2024-03-01T10:00:00Z'),
  created('h02', HOSTILE_TRIAL, 'hs2', 'S-2', '2024-03-02T10:00:00Z', '2024-03-02T10:00:00Z', '<b onmouseover=alert(2)>x</b>'),
  attempt('h03', 'v1.contactAttempt.created', HOSTILE_TRIAL, 'hs1', HOSTILE_SITE, 'HA1', '2024-03-03', '2024-03-03T10:00:00Z', [
    '<i>odd</i>',
  ]),
  status('h04', HOSTILE_TRIAL, 'hs2', 'S-2', '<svg onload=alert(3)>', '2024-03-04T10:00:00Z'),
  { event_id: 'h05', event_type: '<script>type</script>', published_time: '2024-03-04T10:00:00Z', message: { trialId: HOSTILE_TRIAL } },
];

/** Write the operator CSV naming the hostile sites with markup. */
export function hostileSiteNames(dir: string): string {
  const path = join(dir, 'site-names.csv');
  const q = (s: string) => `"${s.replaceAll('"', '""')}"`;
  writeFileSync(path, `site_id,trial_id,site_name,sponsor_site_id\n${q(HOSTILE_SITE)},,${q(HOSTILE_NAME)},\nS-2,,${q(HOSTILE_TRIAL)},\n`);
  return path;
}
