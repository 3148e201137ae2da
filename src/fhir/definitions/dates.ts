/**
 * FHIR dates as half-open millisecond ranges [lo, hi): a value stands for the
 * whole interval of its precision ("2020" is all of 2020). Values without a
 * time zone are taken as UTC.
 */
const DATE = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

export function dateRange(value: string): [number, number] | undefined {
  const m = DATE.exec(value.trim());
  if (!m) return undefined;
  const y = Number(m[1]);
  const mo = m[2] ? Number(m[2]) - 1 : undefined;
  const d = m[3] ? Number(m[3]) : undefined;
  if (mo === undefined) return [Date.UTC(y, 0, 1), Date.UTC(y + 1, 0, 1)];
  if (mo < 0 || mo > 11) return undefined;
  if (d === undefined) return [Date.UTC(y, mo, 1), Date.UTC(y, mo + 1, 1)];
  if (d < 1 || d > 31) return undefined;
  if (m[4] === undefined) return [Date.UTC(y, mo, d), Date.UTC(y, mo, d + 1)];
  const tz = m[8];
  const offset = !tz || tz === 'Z' ? 0 : (tz[0] === '-' ? -1 : 1) * (Number(tz.slice(1, 3)) * 60 + Number(tz.slice(4, 6))) * 60_000;
  const h = Number(m[4]);
  const mi = Number(m[5]);
  const base = Date.UTC(y, mo, d, h, mi) - offset;
  if (m[6] === undefined) return [base, base + 60_000];
  const s = Number(m[6]);
  if (m[7] === undefined) return [base + s * 1000, base + s * 1000 + 1000];
  const ms = Number(`0.${m[7]}`) * 1000;
  const digits = m[7].length;
  const step = digits >= 3 ? 1 : 10 ** (3 - digits);
  const lo = base + s * 1000 + Math.floor(ms);
  return [lo, lo + step];
}
