/**
 * Constant-time comparison of secrets. Both sides are hashed first so the
 * comparison takes the same time whatever the lengths (timingSafeEqual alone
 * throws on a length mismatch, which leaks the length).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function safeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
