/**
 * One patient's story (story.ts): the created event, the acknowledgement, then the
 * contact attempts (storyContacts.ts) and the status changes (storyStatuses.ts) they lead
 * to, and with schema drift the subject-id and comment updates. Each patient draws from
 * random streams of its own, so the order of the draws below is part of the data set.
 *
 * @module
 */
import { COMMENT_UPDATED, PATIENT_CREATED, REFERRAL_ACKNOWLEDGED, STATUS_CHANGED, SUBJECT_ID_UPDATED } from './eventTypes.js';
import { Rng } from './prng.js';
import type { TrialSite } from './sites.js';
import { clamp, DAY, days, HOUR, iso, MIN, type Draft, type PatientStory } from './storyCommon.js';
import { contactAttempts } from './storyContacts.js';
import type { Role } from './storyRoles.js';
import { statusHistory } from './storyStatuses.js';

/** Inputs of {@link tellPatient}. */
export interface PatientInput {
  seed: number;
  /** 0-based trial index. */
  trialIndex: number;
  /** 0-based patient index within the trial. */
  patientIndex: number;
  trialId: string;
  trialSites: TrialSite[];
  role: Role | undefined;
  /** Referral time, epoch ms. */
  referralAt: number;
  drift: boolean;
  /** Appends a draft to the stream (assigning its `seq`). */
  push(draft: Omit<Draft, 'seq'>): Draft;
}

/**
 * Tells one patient's story through `input.push`.
 *
 * @returns the `v1.patient.created` draft with its created time, unless the patient is an orphan
 */
export function tellPatient(input: PatientInput): { draft: Draft; createdAt: number } | undefined {
  const { seed, trialIndex: t, patientIndex: k, trialId, trialSites, role, drift } = input;
  const rng = new Rng(seed, 1_000_000 + t * 100_000 + k);
  const drng = new Rng(seed, 5_000_000 + t * 100_000 + k);
  const rsid = `RS-${rng.base32(10)}`;
  const firstSite = rng.weighted(
    trialSites,
    trialSites.map((s) => s.weight),
  );
  const R = input.referralAt;
  const createdAt = R + rng.int(5, 600) * 1000;
  const lag = (): number => clamp(rng.logNormal(3000, 1), 150, 120_000);
  const p: PatientStory = {
    rng,
    drng,
    role,
    trialIndex: t,
    trialId,
    referralSubjectId: rsid,
    createdAt,
    site: firstSite,
    lastDomain: createdAt,
    emit: (type, domainAt, message, extraLag = 0) =>
      input.push({ publishAt: Math.round(domainAt + lag() + extraLag), trialId, type, message }),
    ids: () => ({ siteId: p.site.eventSiteId, trialId, referralSubjectId: rsid }),
  };

  let created: { draft: Draft; createdAt: number } | undefined;
  if (role !== 'orphan') {
    const d = p.emit(PATIENT_CREATED, createdAt, {
      referralReceivedTime: iso(R),
      createdTime: iso(createdAt),
      siteId: firstSite.eventSiteId,
      trialId,
      referralSubjectId: rsid,
      patientStatus: 'potentialCandidate',
      sponsorSiteId: firstSite.sponsorSiteId,
    });
    created = { draft: d, createdAt };
  }

  acknowledgement(p);
  const contact = contactAttempts(p, trialSites);
  for (const s of statusHistory(p, contact)) {
    const extraLag = s.lateBy ?? (rng.chance(0.01) ? days(rng, 1, 4) : 0);
    p.emit(STATUS_CHANGED, s.at, { statusChangedTime: iso(s.at), ...p.ids(), patientStatus: s.status }, extraLag);
    p.lastDomain = Math.max(p.lastDomain, s.at);
    if (drift && s.status === 'enrolled') {
      const u = s.at + drng.int(1, 20) * MIN;
      p.emit(SUBJECT_ID_UPDATED, u, {
        subjectIdUpdatedTime: iso(u),
        ...p.ids(),
        subjectId: `S${t + 1}-${String(drng.int(1, 9999)).padStart(4, '0')}`,
      });
    }
  }
  if (drift && drng.chance(0.08)) {
    const c = Math.round(drng.between(createdAt + HOUR, Math.max(createdAt + 2 * HOUR, p.lastDomain)));
    p.emit(COMMENT_UPDATED, c, {
      commentUpdatedTime: iso(c),
      ...p.ids(),
      commentId: `cm_${drng.hex(16)}`,
      comment: drng.pick([
        'Prefers calls after 5pm.',
        'Spanish-speaking coordinator requested.',
        'Will bring medication list to visit.',
        'Asked for parking information.',
      ]),
    });
  }
  return created;
}

/** Acknowledgement: hours to days after the referral, for most patients; rarely twice. */
function acknowledgement(p: PatientStory): void {
  const { rng } = p;
  if (!rng.chance(0.85)) return;
  const ackAt = Math.round(p.createdAt + clamp(rng.logNormal(18 * HOUR, 1.1), 15 * MIN, 12 * DAY));
  p.emit(REFERRAL_ACKNOWLEDGED, ackAt, { referralAcknowledgedTime: iso(ackAt), ...p.ids() });
  p.lastDomain = Math.max(p.lastDomain, ackAt);
  if (rng.chance(0.03)) {
    const again = ackAt + rng.int(1, 48) * HOUR;
    p.emit(REFERRAL_ACKNOWLEDGED, again, { referralAcknowledgedTime: iso(again), ...p.ids() });
  }
}
