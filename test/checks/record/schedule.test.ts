/**
 * Issue 46: when a scheduled acceptance run writes its record. Unit level; the
 * end-to-end path (the real CLI, a real stack, the supervisor's schedule) is
 * test/checks/scheduled-acceptance.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { UNCHANGED_RECORD_EVERY_MS, writeReason } from '../../../src/checks/record/schedule.js';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 29) + ms).toISOString();
const rec = (result: 'accepted' | 'rejected', digest: string | null, ms: number) => ({ result, gatewayConfigSha256: digest, testedAt: at(ms) });

describe('writeReason', () => {
  it('writes the first record, and one on a changed result or gateway configuration', () => {
    expect(writeReason(null, rec('accepted', 'a', 0))).toBe('first');
    expect(writeReason(rec('accepted', 'a', 0), rec('rejected', 'a', 60_000))).toBe('result changed');
    expect(writeReason(rec('rejected', 'a', 0), rec('accepted', 'a', 60_000))).toBe('result changed');
    expect(writeReason(rec('accepted', 'a', 0), rec('accepted', 'b', 60_000))).toBe('gateway configuration changed');
    // an admin API that stopped answering (no digest) is a change too
    expect(writeReason(rec('accepted', 'a', 0), rec('accepted', null, 60_000))).toBe('gateway configuration changed');
  });

  it('an unchanged site: nothing within a day, a record once the newest is a day old', () => {
    expect(writeReason(rec('accepted', 'a', 0), rec('accepted', 'a', 60_000))).toBeNull();
    expect(writeReason(rec('accepted', 'a', 0), rec('accepted', 'a', UNCHANGED_RECORD_EVERY_MS - 1))).toBeNull();
    expect(writeReason(rec('accepted', 'a', 0), rec('accepted', 'a', UNCHANGED_RECORD_EVERY_MS))).toBe('daily');
  });

  it('a clock set back writes (the chain then shows the jump)', () => {
    expect(writeReason(rec('accepted', 'a', 60_000), rec('accepted', 'a', 0))).toBe('daily');
  });
});
