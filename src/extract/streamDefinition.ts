/**
 * What a stream is (docs/contracts.md "Streams"): one query against one API origin,
 * a set of trial ids × a set of event types, with its own durable cursor. The cursor is
 * bound to its filter, so a changed filter is a different stream.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { StreamDefinition } from '../warehouse/StreamStore.js';

/** Inputs of {@link defineStream}. */
export interface StreamFilterInput {
  environment: string;
  /** `--base-url`; only its origin (scheme, host, port) identifies the stream. */
  baseUrl: string;
  trialIds: readonly string[];
  eventTypes: readonly string[];
}

function normalise(values: readonly string[]): string[] {
  return [...new Set(values.map((v) => v.trim()).filter((v) => v.length > 0))].sort();
}

/**
 * The stream for a filter. The id is stable for the same environment, origin and
 * (order-insensitive, de-duplicated) filter: `s_` + the first 16 hex digits of a SHA-256.
 */
export function defineStream(input: StreamFilterInput): StreamDefinition {
  const apiOrigin = new URL(input.baseUrl).origin;
  const trialIds = normalise(input.trialIds);
  const eventTypes = normalise(input.eventTypes);
  const key = JSON.stringify({ environment: input.environment, apiOrigin, trialIds, eventTypes });
  const streamId = `s_${createHash('sha256').update(key).digest('hex').slice(0, 16)}`;
  const name = `${input.environment}: ${trialIds.length} trial(s) [${trialIds.join(', ')}] × ${eventTypes.length} event type(s)`;
  return { streamId, name, environment: input.environment, apiOrigin, trialIds, eventTypes };
}
