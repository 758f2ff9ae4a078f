import { describe, expect, it } from 'vitest';
import { defineStream } from '../../../src/extract/streamDefinition.js';

const base = { environment: 'production', baseUrl: 'https://api.example.test/base', trialIds: ['T2', 'T1'], eventTypes: ['b', 'a'] };

describe('defineStream', () => {
  it('is stable for the same filter in any order, with duplicates', () => {
    const a = defineStream(base);
    const b = defineStream({ ...base, trialIds: ['T1', 'T2', 'T1'], eventTypes: ['a', 'b'] });
    expect(a.streamId).toBe(b.streamId);
    expect(a.streamId).toMatch(/^s_[0-9a-f]{16}$/);
    expect(a.trialIds).toEqual(['T1', 'T2']);
    expect(a.apiOrigin).toBe('https://api.example.test');
  });

  it('is a different stream when the filter, the origin or the environment changes', () => {
    const a = defineStream(base).streamId;
    expect(defineStream({ ...base, eventTypes: ['a', 'b', 'c'] }).streamId).not.toBe(a);
    expect(defineStream({ ...base, trialIds: ['T1'] }).streamId).not.toBe(a);
    expect(defineStream({ ...base, baseUrl: 'https://api.example.test:8443/base' }).streamId).not.toBe(a);
    expect(defineStream({ ...base, environment: 'staging' }).streamId).not.toBe(a);
    // The path is not part of the origin.
    expect(defineStream({ ...base, baseUrl: 'https://api.example.test/other' }).streamId).toBe(a);
  });
});
