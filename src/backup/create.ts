/**
 * `hospital-api backup` (issue 15): one archive with everything needed to
 * rebuild the site: the FHIR store (native: SQLite online backup while it
 * serves), the gateway state, install configuration, settings, secrets, TLS
 * material, the signed acceptance records and the audit log. Every part is
 * encrypted (crypto.ts); the manifest lists sizes, SHA-256 of each part,
 * versions and the time. The archive is written to a temp file (mode 0600),
 * fsynced and renamed, so a crash leaves no half archive under the name.
 */
import { closeSync, createWriteStream, existsSync, fsyncSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { create as tarCreate } from 'tar';
import { HospitalApiError, toHospitalApiError } from '../errors/index.js';
import { inspectFhirStore } from '../fhir/store/online-backup.js';
import { readInstallConfig, type InstallConfig, type RuntimeName } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import { profileOf } from '../runtime/profiles.js';
import type { Runtime } from '../runtime/types.js';
import { VERSION } from '../version.js';
import { deriveKey, encryptFile, keyCheck, mac, newKdfParams } from './crypto.js';
import { ARCHIVE_FORMAT, ARCHIVE_FORMAT_VERSION, macText, type Manifest, type ManifestPart, type PartKind } from './manifest.js';
import { backupSecret } from './secret.js';

export interface BackupOptions {
  out?: string;
  /** The install's configuration when readInstallConfig would refuse it (an older format, before `upgrade`). */
  config?: InstallConfig;
  keyFile?: string;
  env?: NodeJS.ProcessEnv;
}

export interface BackupResult {
  out: string;
  bytes: number;
  parts: Array<{ path: string; kind: PartKind; bytes: number; sha256: string }>;
  fhir: Manifest['fhir'];
  seconds: number;
}

/**
 * Name order, but an audit log's chain state (`audit.log.chain`, issue 46) before the log beside it
 * (docker keeps both in docker/api-logs/): the log, copied after, then holds every line its last seal counts.
 */
function chainStateFirst(a: string, b: string): number {
  const [ca, cb] = [a.endsWith('.chain'), b.endsWith('.chain')];
  if (ca !== cb) return ca ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Files of the install directory that go in, by kind; run/, logs (but the audit log), backups/ stay out. */
function configFiles(root: string, runtime: RuntimeName): Array<{ path: string; kind: PartKind }> {
  const out: Array<{ path: string; kind: PartKind }> = [];
  const add = (rel: string, kind: PartKind): void => {
    const abs = join(root, rel);
    if (existsSync(abs) && lstatSync(abs).isFile()) out.push({ path: rel, kind });
  };
  const walk = (rel: string, kind: (name: string) => PartKind): void => {
    const abs = join(root, rel);
    if (!existsSync(abs) || !lstatSync(abs).isDirectory()) return;
    for (const name of readdirSync(abs).sort(chainStateFirst)) {
      if (name.startsWith('.')) continue;
      const child = `${rel}/${name}`;
      const st = lstatSync(join(root, child));
      if (st.isDirectory()) walk(child, kind);
      else if (st.isFile()) out.push({ path: child, kind: kind(name) });
    }
  };
  add('install.json', 'install-config');
  add('hospital-api.env', 'api-settings');
  walk('secrets', () => 'secret');
  walk('tls', (n) => (n.endsWith('.key') ? 'tls-key' : 'tls'));
  walk('reports', () => 'report');
  walk('demo', () => 'demo');
  for (const f of profileOf(runtime).folders) walk(f.folder, () => f.kind);
  // The audit log's chain state first (issue 46): the log copied after it holds at least the lines its last seal counts.
  add('logs/audit.log.chain', 'audit-log');
  // The log and its rotated files, as logrotate names them (src/api/audit/audit-check.ts, auditLogFiles).
  for (const name of existsSync(join(root, 'logs')) ? readdirSync(join(root, 'logs')).sort() : []) {
    if (/^audit\.log((\.\d+|-\d{8,10})(\.gz)?)?$/.test(name)) add(`logs/${name}`, 'audit-log');
  }
  return out;
}

function stamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

export async function createBackup(runtime: Runtime, dir: string, options: BackupOptions, log: (text: string) => void): Promise<BackupResult> {
  const started = Date.now();
  const paths = installPaths(dir);
  const config = options.config ?? readInstallConfig(dir);
  const createdAt = new Date();
  const out = resolve(options.out ?? join(paths.root, 'backups', `hospital-api-${stamp(createdAt)}.tar`));
  if (existsSync(out)) throw new HospitalApiError('ERR_BACKUP_FAILED', { detail: `${out} already exists`, out });
  const { secret, source } = await backupSecret({ ...(options.keyFile ? { keyFile: options.keyFile } : {}), confirm: true }, options.env);
  const kdf = newKdfParams();
  const key = deriveKey(secret, kdf);
  mkdirSync(dirname(out), { recursive: true, mode: 0o700 });
  // Staging beside the archive: same file system for the final rename; 0700.
  const staging = mkdtempSync(join(dirname(out), '.hospital-api-backup-'));
  const tmpOut = join(dirname(out), `.${basename(out)}.partial`);
  try {
    const sealedDir = join(staging, 'sealed');
    mkdirSync(join(sealedDir, 'parts'), { recursive: true });
    log('copying the live data (the stack keeps serving)');
    const dataDir = join(staging, 'data');
    const dataParts = await runtime.snapshotData(dataDir, log);
    const items: Array<{ path: string; kind: PartKind; src: string; mode: number }> = [
      ...configFiles(paths.root, config.runtime).map((f) => ({ ...f, src: join(paths.root, f.path), mode: statSync(join(paths.root, f.path)).mode & 0o777 })),
      ...dataParts.map((d) => ({
        path: d.path, kind: d.kind as PartKind, src: join(dataDir, d.path),
        // keep the live file's mode; the gateway state holds credentials: never wider than 0600
        mode: d.kind === 'gateway-state' ? 0o600 : existsSync(join(paths.root, d.path)) ? statSync(join(paths.root, d.path)).mode & 0o777 : 0o600,
      })),
    ];
    let fhir: Manifest['fhir'] = null;
    const store = dataParts.find((d) => d.kind === 'fhir-store');
    if (store) fhir = inspectFhirStore(join(dataDir, store.path));
    const parts: ManifestPart[] = [];
    for (const [i, item] of items.entries()) {
      const member = `parts/${String(i + 1).padStart(4, '0')}.bin`;
      const sealed = await encryptFile(item.src, join(sealedDir, member), key, item.path);
      parts.push({ path: item.path, kind: item.kind, member, mode: item.mode, ...sealed });
      if (sealed.bytes > 1_000_000 || item.kind === 'fhir-store') log(`encrypted ${item.path} (${sealed.bytes} bytes)`);
    }
    log(`encrypted ${parts.length} parts`);
    const versions = await runtime.versions().catch(() => []);
    const unsigned: Omit<Manifest, 'mac'> = {
      format: ARCHIVE_FORMAT, formatVersion: ARCHIVE_FORMAT_VERSION, createdAt: createdAt.toISOString(), host: hostname(),
      toolkitVersion: VERSION, node: process.version, runtime: config.runtime, installFormatVersion: config.formatVersion, demo: config.demo,
      components: versions.map((v) => ({ name: v.name, version: v.version })), fhir,
      encryption: { cipher: 'aes-256-gcm', kdf, keySource: source, keyCheck: keyCheck(key) },
      parts,
    };
    const manifest: Manifest = { ...unsigned, mac: mac(key, macText(unsigned)) };
    writeFileSync(join(sealedDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    await pipeline(
      tarCreate({ cwd: sealedDir, portable: true, noDirRecurse: true }, ['manifest.json', ...parts.map((p) => p.member)]),
      createWriteStream(tmpOut, { flags: 'wx', mode: 0o600 }),
    );
    const fd = openSync(tmpOut, 'r');
    try { fsyncSync(fd); } finally { closeSync(fd); }
    renameSync(tmpOut, out);
    const dfd = openSync(dirname(out), 'r');
    try { fsyncSync(dfd); } finally { closeSync(dfd); }
    const bytes = statSync(out).size;
    log(`backup written: ${out} (${bytes} bytes, ${parts.length} parts)`);
    return {
      out, bytes, fhir, seconds: Math.round((Date.now() - started) / 100) / 10,
      parts: parts.map((p) => ({ path: p.path, kind: p.kind, bytes: p.bytes, sha256: p.sha256 })),
    };
  } catch (err) {
    rmSync(tmpOut, { force: true });
    const e = toHospitalApiError(err);
    if (e.code !== 'ERR_INTERNAL') throw e;
    throw new HospitalApiError('ERR_BACKUP_FAILED', { detail: (err as Error).message, out }, { cause: err });
  } finally {
    rmSync(staging, { recursive: true, force: true });
    key.fill(0);
  }
}
