/**
 * Constant-time comparison of secrets. Both sides are hashed first so the
 * comparison takes the same time whatever the lengths (timingSafeEqual alone
 * throws on a length mismatch, which leaks the length).
 */
import { hash, timingSafeEqual } from 'node:crypto';

/**
 * crypto.hash is the one-shot digest (https://nodejs.org/api/crypto.html#cryptohashalgorithm-data-options):
 * no Hash object per side. The gateway's key-auth compares on every proxied request (issue 28).
 */
export function safeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}
