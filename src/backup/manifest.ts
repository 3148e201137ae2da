/**
 * The backup archive (issue 15): a POSIX tar holding `manifest.json` (in
 * clear: no secret, only sizes, hashes, versions and times) and one encrypted
 * file per part under `parts/`. The manifest is authenticated with an HMAC
 * under the backup key, each part by its GCM tag.
 */
import type { RuntimeFolder } from '../runtime/profile.js';
import type { KdfParams } from './crypto.js';

export const ARCHIVE_FORMAT = 'hospital-api-backup';
export const ARCHIVE_FORMAT_VERSION = 1;

export type PartKind =
  | 'install-config' | 'api-settings' | 'secret' | 'tls' | 'tls-key' | 'report' | 'demo' | RuntimeFolder['kind'] | 'audit-log'
  | 'fhir-store' | 'gateway-state'
  // docker: pg_dump custom-format archives of HAPI's and Kong's databases
  | 'fhir-database' | 'gateway-database';

export interface ManifestPart {
  /** Where it goes, relative to the install directory (layout.ts). */
  path: string;
  kind: PartKind;
  /** Its member in the archive, `parts/NNNN.bin`. */
  member: string;
  mode: number;
  bytes: number;
  sha256: string;
  cipherBytes: number;
  cipherSha256: string;
  iv: string;
  tag: string;
}

export interface Manifest {
  format: typeof ARCHIVE_FORMAT;
  formatVersion: number;
  createdAt: string;
  host: string;
  toolkitVersion: string;
  node: string;
  runtime: string;
  installFormatVersion: number;
  demo: boolean;
  components: Array<{ name: string; version: string }>;
  fhir: { schemaVersion: number; resources: number } | null;
  encryption: { cipher: 'aes-256-gcm'; kdf: KdfParams; keySource: 'passphrase' | 'key-file'; keyCheck: string };
  parts: ManifestPart[];
  /** HMAC-SHA256 of the manifest without this field (crypto.ts mac). */
  mac: string;
}

/** The text the MAC covers: the manifest without `mac`, as written. */
export function macText(m: Omit<Manifest, 'mac'> | Manifest): string {
  const { mac: _omit, ...rest } = m as Manifest;
  return JSON.stringify(rest);
}

const SAFE_PATH = /^(?:[A-Za-z0-9._-]+\/)*[A-Za-z0-9._-]+$/;
export const MEMBER = /^parts\/\d{4}\.bin$/;

/** Shape checks before anything in the manifest is trusted. @returns a reason, or null */
export function manifestProblem(m: unknown): string | null {
  const x = m as Partial<Manifest> | null;
  if (!x || typeof x !== 'object') return 'the manifest is not an object';
  if (x.format !== ARCHIVE_FORMAT) return 'not a hospital-api backup';
  if (x.formatVersion !== ARCHIVE_FORMAT_VERSION) return `archive format ${String(x.formatVersion)}; this toolkit reads ${ARCHIVE_FORMAT_VERSION}`;
  if (!x.encryption || x.encryption.cipher !== 'aes-256-gcm' || !x.encryption.kdf || typeof x.encryption.keyCheck !== 'string') return 'no encryption parameters';
  if (!Array.isArray(x.parts) || x.parts.length === 0) return 'no parts';
  const seen = new Set<string>();
  for (const p of x.parts) {
    if (!p || typeof p.path !== 'string' || !SAFE_PATH.test(p.path) || p.path.split('/').some((s) => s === '.' || s === '..')) return `unsafe part path ${String(p?.path)}`;
    if (typeof p.member !== 'string' || !MEMBER.test(p.member)) return `bad member name for ${p.path}`;
    if (seen.has(p.path) || seen.has(p.member)) return `duplicate part ${p.path}`;
    seen.add(p.path).add(p.member);
    if (!Number.isInteger(p.bytes) || !Number.isInteger(p.cipherBytes) || !/^[0-9a-f]{64}$/.test(p.sha256) || !/^[0-9a-f]{64}$/.test(p.cipherSha256)) return `bad size or hash for ${p.path}`;
  }
  if (!x.parts.some((p) => p.path === 'install.json')) return 'no install.json';
  return null;
}
