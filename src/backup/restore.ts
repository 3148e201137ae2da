/**
 * `hospital-api restore` (issue 15): into an empty install directory only.
 * Everything is checked before the directory is touched: the archive reads as
 * tar, the manifest has the right shape, the key is right (key check), the
 * manifest is the one that was written (HMAC), every part has the size and
 * SHA-256 the manifest gives, decrypts with a valid GCM tag to the plaintext
 * hash recorded, and the FHIR store passes SQLite's check with the schema
 * version and resource count of the manifest. All of it is staged beside
 * the target; only then is it moved into place. A damaged archive or a wrong
 * passphrase changes nothing.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { extract as tarExtract } from 'tar';
import { HospitalApiError, isHospitalApiError } from '../errors/index.js';
import { inspectFhirStore } from '../fhir/store/online-backup.js';
import { renderApiEnv } from '../install/files.js';
import { writeIfChanged } from '../install-dir/write-if-changed.js';
import { openRuntime, runtimeFor } from '../runtime/index.js';
import { INSTALL_FORMAT, readInstallConfig, type InstallConfig } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import type { DataPart } from '../runtime/types.js';
import { decryptFile, deriveKey, digestFile, keyCheck, mac, sameText } from './crypto.js';
import { macText, manifestProblem, MEMBER, type Manifest } from './manifest.js';
import { backupSecret } from './secret.js';

export interface RestoreOptions {
  keyFile?: string;
  env?: NodeJS.ProcessEnv;
}

export interface RestoreResult {
  dir: string;
  createdAt: string;
  parts: number;
  fhir: Manifest['fhir'];
  seconds: number;
}

const DATA_KINDS = new Set(['fhir-store', 'gateway-state', 'fhir-database', 'gateway-database']);

export async function restoreBackup(file: string, dir: string, options: RestoreOptions, log: (text: string) => void): Promise<RestoreResult> {
  const started = Date.now();
  const paths = installPaths(dir);
  const root = paths.root;
  const existed = existsSync(root);
  if (existed && (!statSync(root).isDirectory() || readdirSync(root).length > 0)) {
    throw new HospitalApiError('ERR_RESTORE_NOT_EMPTY', { dir: root, what: statSync(root).isDirectory() ? readdirSync(root).slice(0, 3).join(', ') : 'a file' });
  }
  const bad = (detail: string, cause?: unknown): HospitalApiError =>
    new HospitalApiError('ERR_RESTORE_BAD_ARCHIVE', { file, detail }, cause === undefined ? {} : { cause });
  if (!existsSync(file) || !statSync(file).isFile()) throw bad('no such file');
  mkdirSync(dirname(root), { recursive: true });
  const staging = mkdtempSync(join(dirname(root), '.hospital-api-restore-'));
  let wrote = false;
  try {
    const sealed = join(staging, 'sealed');
    mkdirSync(sealed);
    log('reading the archive');
    try {
      await tarExtract({
        file, cwd: sealed, strict: true, preserveOwner: false,
        // Only the members a backup has: nothing else is ever unpacked.
        filter: (p, entry) => (p === 'manifest.json' || MEMBER.test(p)) && (entry as { type?: string }).type === 'File',
      });
    } catch (err) {
      throw bad(`not a readable tar archive (${(err as Error).message})`, err);
    }
    let manifest: Manifest;
    try {
      manifest = JSON.parse(readFileSync(join(sealed, 'manifest.json'), 'utf8')) as Manifest;
    } catch (err) {
      throw bad('no readable manifest.json', err);
    }
    const problem = manifestProblem(manifest);
    if (problem) throw bad(problem);
    const { secret } = await backupSecret(options.keyFile ? { keyFile: options.keyFile } : {}, options.env);
    let key: Buffer;
    try {
      key = deriveKey(secret, manifest.encryption.kdf);
    } catch (err) {
      throw bad((err as Error).message, err);
    }
    try {
      if (!sameText(keyCheck(key), manifest.encryption.keyCheck)) throw new HospitalApiError('ERR_RESTORE_DECRYPT');
      if (!sameText(mac(key, macText(manifest)), manifest.mac ?? '')) throw bad('the manifest was altered (its HMAC does not match)');
      const members = new Set(manifest.parts.map((p) => p.member));
      const extra = readdirSync(join(sealed, 'parts')).filter((f) => !members.has(`parts/${f}`));
      if (extra.length) throw bad(`members not in the manifest: ${extra.join(', ')}`);
      const plain = join(staging, 'plain');
      mkdirSync(plain);
      for (const part of manifest.parts) {
        const src = join(sealed, part.member);
        if (!existsSync(src)) throw bad(`${part.member} (${part.path}) is missing`);
        const got = await digestFile(src);
        if (got.bytes !== part.cipherBytes || got.sha256 !== part.cipherSha256) throw bad(`${part.path}: size or SHA-256 differs from the manifest`);
        const dest = join(plain, part.path);
        mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
        let out;
        try {
          out = await decryptFile(src, dest, key, part.path, part);
        } catch (err) {
          throw bad(`${part.path} does not decrypt (authentication failed)`, err);
        }
        if (out.bytes !== part.bytes || out.sha256 !== part.sha256) throw bad(`${part.path}: decrypted content differs from the manifest`);
        chmodSync(dest, part.mode & 0o777);
      }
      const store = manifest.parts.find((p) => p.kind === 'fhir-store');
      if (store) {
        let facts;
        try {
          facts = inspectFhirStore(join(plain, store.path));
        } catch (err) {
          throw bad(`the FHIR store is damaged: ${(err as Error).message}`, err);
        }
        // The check opened it: drop SQLite's side files so only the store itself moves.
        for (const side of ['-wal', '-shm', '-journal']) rmSync(join(plain, store.path + side), { force: true });
        if (manifest.fhir && (facts.schemaVersion !== manifest.fhir.schemaVersion || facts.resources !== manifest.fhir.resources)) {
          throw bad(`the FHIR store holds ${facts.resources} resources (schema ${facts.schemaVersion}); the manifest says ${manifest.fhir.resources} (schema ${manifest.fhir.schemaVersion})`);
        }
      }
      log(`checked ${manifest.parts.length} parts against the manifest (backup of ${manifest.createdAt})`);

      // Everything checked: now, and only now, the install directory.
      const data = join(staging, 'data');
      const dataParts: DataPart[] = [];
      for (const part of manifest.parts.filter((p) => DATA_KINDS.has(p.kind))) {
        mkdirSync(dirname(join(data, part.path)), { recursive: true });
        renameSync(join(plain, part.path), join(data, part.path));
        dataParts.push({ path: part.path, kind: part.kind as DataPart['kind'] });
      }
      if (existed) rmdirSync(root);
      wrote = true;
      renameSync(plain, root);
      chmodSync(root, 0o700);
      // A backup of an older install format is restored as it was; `hospital-api upgrade` then migrates it.
      const raw = JSON.parse(readFileSync(paths.installJson, 'utf8')) as InstallConfig;
      const current = raw.formatVersion === INSTALL_FORMAT;
      await (current ? await openRuntime(root) : await runtimeFor(root, raw)).restoreData(data, dataParts);
      if (current) {
        // Settings name files by absolute path: point them at this directory.
        writeIfChanged(paths.apiEnv, renderApiEnv(paths, readInstallConfig(root)), true);
      } else {
        log(`this backup is of install format ${String(raw.formatVersion)}: run \`hospital-api upgrade --dir ${root}\` before \`up\``);
      }
      log(`restored into ${root}${store ? ` (${manifest.fhir?.resources ?? '?'} FHIR resources)` : ''}; start it with \`hospital-api up --dir ${root}\`, then \`hospital-api verify\``);
      return { dir: root, createdAt: manifest.createdAt, parts: manifest.parts.length, fhir: manifest.fhir, seconds: Math.round((Date.now() - started) / 100) / 10 };
    } finally {
      key.fill(0);
    }
  } catch (err) {
    if (wrote) {
      // It was empty (or absent) before: leave it so.
      rmSync(root, { recursive: true, force: true });
      if (existed) mkdirSync(root, { recursive: true });
    }
    if (isHospitalApiError(err)) throw err;
    throw bad((err as Error).message, err);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

