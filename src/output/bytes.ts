/** Byte counts for people: `512 B`, `3.4 KiB`, `12.0 MiB`, `1.2 GiB` (IEC units, powers of 1024). */
const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${Math.max(0, Math.round(bytes || 0))} B`;
  let value = bytes;
  let unit: (typeof UNITS)[number] = UNITS[0];
  for (const u of UNITS) {
    value /= 1024;
    unit = u;
    if (value < 1024) break;
  }
  return `${value.toFixed(1)} ${unit}`;
}
