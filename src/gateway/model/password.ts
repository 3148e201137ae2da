/**
 * basic-auth password hashing. Kong stores lowercase hex SHA-1(password +
 * consumer_id) (Kong's kong/plugins/basic-auth/crypto.lua): unsalted and fast, so a
 * leaked state file is cheap to brute-force. We store
 * `scrypt$N$r$p$<salt b64>$<hash b64>` instead (per-credential random salt,
 * N=2^14 r=8 p=1: about 35 ms per hash here). Kong's SHA-1 form is accepted only
 * when imported from a declarative config with `_transform: false`; our scrypt
 * form is also recognised in a declarative config without it (the decK-format
 * export, see src/gateway/declarative/parse.ts).
 *
 * The proxy verifies on every request, so a successful verification is cached
 * in memory as HMAC(process key, password) per stored hash: the next request
 * with the same credential costs one HMAC. The cache never holds a password.
 */
import { createHash, createHmac, randomBytes, scrypt, scryptSync, timingSafeEqual } from 'node:crypto';
import { safeEqual } from '../../util/constant-time.js';

const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;
const MAXMEM = 64 * 1024 * 1024;
const SHA1_HEX = /^[0-9a-f]{40}$/;
const SCRYPT_FORM = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

/** Hashes a basic-auth password for storage (never returns the password). */
export function hashBasicAuthPassword(password: string, _consumerId: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, KEY_LEN, { N, r: R, p: P, maxmem: MAXMEM });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/**
 * A stored-form scrypt hash that no password matches (random salt and random
 * hash bytes), with the same cost parameters as hashBasicAuthPassword: checking
 * a password against it costs exactly what checking against a real credential
 * does. basic-auth checks unknown usernames against it so they cannot be told
 * from known ones by time.
 */
export function unmatchableBasicAuthPasswordHash(): string {
  return `scrypt$${N}$${R}$${P}$${randomBytes(16).toString('base64')}$${randomBytes(KEY_LEN).toString('base64')}`;
}

/** Kong's own form, for `_transform: true` documents that must stay Kong-compatible. */
export function kongSha1Password(password: string, consumerId: string): string {
  return createHash('sha1').update(password + consumerId).digest('hex');
}

/** True when `stored` is a hash this module can verify (scrypt form or Kong's SHA-1 hex). */
export function isStoredPasswordHash(stored: string): boolean {
  return SHA1_HEX.test(stored) || parseScrypt(stored) !== null;
}

/** True when `stored` is this module's own scrypt form (self-describing: never mistaken for Kong's SHA-1 hex). */
export function isScryptPasswordHash(stored: string): boolean {
  return parseScrypt(stored) !== null;
}

interface ScryptParams {
  n: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parseScrypt(stored: string): ScryptParams | null {
  const m = SCRYPT_FORM.exec(stored);
  if (!m) return null;
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Refuse absurd costs from an edited state file rather than stall the proxy.
  if (n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return { n, r, p, salt: Buffer.from(m[4] as string, 'base64'), hash: Buffer.from(m[5] as string, 'base64') };
}

const CACHE_MAX = 10_000;
const cacheKey = randomBytes(32);
const verified = new Map<string, Buffer>();

function digest(password: string): Buffer {
  return createHmac('sha256', cacheKey).update(password).digest();
}

function cached(stored: string, d: Buffer): boolean {
  const hit = verified.get(stored);
  return hit !== undefined && timingSafeEqual(hit, d);
}

function remember(stored: string, d: Buffer): void {
  if (verified.size >= CACHE_MAX) verified.clear();
  verified.set(stored, d);
}

/** Constant-time check of a password against a stored hash. Sync: blocks ~35 ms on a cache miss. */
export function verifyBasicAuthPassword(password: string, consumerId: string, stored: string): boolean {
  const d = digest(password);
  if (cached(stored, d)) return true;
  if (SHA1_HEX.test(stored)) return safeEqual(kongSha1Password(password, consumerId), stored);
  const params = parseScrypt(stored);
  if (!params) return false;
  const hash = scryptSync(password, params.salt, params.hash.length, { N: params.n, r: params.r, p: params.p, maxmem: MAXMEM });
  const ok = hash.length === params.hash.length && timingSafeEqual(hash, params.hash);
  if (ok) remember(stored, d);
  return ok;
}

/** Same as verifyBasicAuthPassword, but a cache miss runs scrypt on the libuv pool, not the event loop. */
export async function verifyBasicAuthPasswordAsync(password: string, consumerId: string, stored: string): Promise<boolean> {
  const d = digest(password);
  if (cached(stored, d)) return true;
  if (SHA1_HEX.test(stored)) return safeEqual(kongSha1Password(password, consumerId), stored);
  const params = parseScrypt(stored);
  if (!params) return false;
  const hash = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password, params.salt, params.hash.length, { N: params.n, r: params.r, p: params.p, maxmem: MAXMEM }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
  const ok = hash.length === params.hash.length && timingSafeEqual(hash, params.hash);
  if (ok) remember(stored, d);
  return ok;
}
