/**
 * Encryption of backup parts (issue 15), node:crypto only: a key derived from
 * the hospital's passphrase or key file with scrypt (RFC 7914), each part
 * encrypted with AES-256-GCM under its own random 96-bit IV (NIST SP 800-38D)
 * and its archive path as additional data, so a part cannot be swapped for
 * another. Files are streamed, so a large FHIR store never sits in memory.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, scryptSync, timingSafeEqual, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface KdfParams {
  name: 'scrypt';
  /** CPU/memory cost (2^15: ~32 MB, ~0.1 s), block size, parallelism. */
  N: number;
  r: number;
  p: number;
  /** base64, 16 random bytes. */
  salt: string;
}

export function newKdfParams(): KdfParams {
  return { name: 'scrypt', N: 2 ** 15, r: 8, p: 1, salt: randomBytes(16).toString('base64') };
}

export function deriveKey(secret: Buffer, kdf: KdfParams): Buffer {
  if (kdf.name !== 'scrypt' || !Number.isInteger(kdf.N) || kdf.N < 2 ** 14 || kdf.N > 2 ** 20 || kdf.r < 1 || kdf.r > 32 || kdf.p < 1 || kdf.p > 16) {
    throw new Error('unsupported key derivation parameters');
  }
  return scryptSync(secret, Buffer.from(kdf.salt, 'base64'), 32, { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 256 * kdf.N * kdf.r });
}

/** Tells a wrong passphrase from a damaged archive; reveals no more than a GCM tag would. */
export function keyCheck(key: Buffer): string {
  return createHmac('sha256', key).update('hospital-api backup key check v1').digest('base64');
}

export function mac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update('hospital-api backup manifest v1\n').update(text).digest('base64');
}

export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function tap(hash: Hash, count: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      count.bytes += chunk.length;
      done(null, chunk);
    },
  });
}

export interface Sealed {
  iv: string;
  tag: string;
  bytes: number;
  sha256: string;
  cipherBytes: number;
  cipherSha256: string;
}

export async function encryptFile(src: string, dest: string, key: Buffer, aad: string): Promise<Sealed> {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const plainHash = createHash('sha256');
  const cipherHash = createHash('sha256');
  const plain = { bytes: 0 };
  const sealed = { bytes: 0 };
  await pipeline(createReadStream(src), tap(plainHash, plain), cipher, tap(cipherHash, sealed), createWriteStream(dest, { flags: 'wx', mode: 0o600 }));
  return {
    iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'),
    bytes: plain.bytes, sha256: plainHash.digest('hex'), cipherBytes: sealed.bytes, cipherSha256: cipherHash.digest('hex'),
  };
}

/** SHA-256 and size of a file, streamed. */
export async function digestFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  const count = { bytes: 0 };
  await pipeline(createReadStream(path), tap(hash, count), new Transform({ transform: (_c, _e, done) => done() }));
  return { bytes: count.bytes, sha256: hash.digest('hex') };
}

/** Decrypts into `dest` (a staging file); rejects when the tag does not verify. */
export async function decryptFile(src: string, dest: string, key: Buffer, aad: string, sealed: Pick<Sealed, 'iv' | 'tag'>): Promise<{ bytes: number; sha256: string }> {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  const hash = createHash('sha256');
  const count = { bytes: 0 };
  await pipeline(createReadStream(src), decipher, tap(hash, count), createWriteStream(dest, { flags: 'wx', mode: 0o600 }));
  return { bytes: count.bytes, sha256: hash.digest('hex') };
}
