/** Fixed rate-limiting windows (Kong's timestamps: calendar-aligned, UTC). */
import type { Period } from './schema.js';

const FIXED: Partial<Record<Period, number>> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Start and end (ms) of the window of `period` containing `now`. */
export function windowOf(period: Period, now: number): [number, number] {
  const size = FIXED[period];
  if (size !== undefined) {
    const start = now - (now % size);
    return [start, start + size];
  }
  const d = new Date(now);
  if (period === 'month') return [Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)];
  return [Date.UTC(d.getUTCFullYear(), 0, 1), Date.UTC(d.getUTCFullYear() + 1, 0, 1)];
}
