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

/**
 * The lookup form of a secret: its SHA-256 digest (base64). A map keyed by this, not by the secret, makes the
 * lookup's timing depend on the digest, which tells an attacker nothing usable about the secret, where a map keyed
 * by the secret itself compares the caller's guess against stored keys (and a constant-time compare after such a
 * lookup adds nothing: the map has already matched). The gateway's key-auth indexes its credentials this way.
 */
export function secretDigest(secret: string): string {
  return hash('sha256', secret, 'base64');
}
