/**
 * Seeded randomness for the generator: the same seed gives the same stream on
 * every machine and Node version (no Math.random, no clock), so output is
 * byte-identical for a seed.
 */
import { createHash } from 'node:crypto';

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string | number) {
    const h = createHash('sha256').update(`hospital-api:${String(seed)}`).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12) | 1;
    for (let i = 0; i < 12; i++) this.next();
  }

  /** sfc32: small, fast, good enough statistically for synthetic data. */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  digits(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String(this.int(0, 9));
    return s;
  }

  /** An RFC 4122 version-4-shaped UUID drawn from the stream. */
  uuid(): string {
    let hex = '';
    for (let i = 0; i < 4; i++) hex += Math.floor(this.next() * 4294967296).toString(16).padStart(8, '0');
    const v = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${v}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
  }
}

/** A fixed calendar so no output depends on the day the generator runs. */
export const EPOCH_MS = Date.UTC(2015, 0, 1);
export const SPAN_MS = Date.UTC(2025, 11, 31) - EPOCH_MS;

export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
