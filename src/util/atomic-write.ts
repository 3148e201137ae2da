/**
 * Write-temp-then-rename: a reader (or a crash) sees the old file or the new
 * one, never half of either. The temp file is fsynced before the rename and
 * created with the final mode, so a key is never readable by others even briefly.
 */
import { closeSync, fchownSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { HospitalApiError } from '../errors/index.js';

export interface AtomicWriteOptions {
  /** File mode, e.g. 0o600 for private keys and secrets. */
  mode?: number;
}

export function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    mkdirSync(dir, { recursive: true });
    const fd = openSync(tmp, 'wx', options.mode ?? 0o644);
    try {
      takeFolderOwner(fd, dir);
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // The temp file never existed (e.g. the directory is a file): nothing to clean.
    }
    throw new HospitalApiError('ERR_FILE_WRITE', { path, detail: (err as Error).message }, { cause: err });
  }
}

/**
 * Run as root, a new file takes the owner of its folder, before its first byte.
 * An install run by systemd belongs to its service user (`chown -R`, as
 * `hospital-api systemd` prints), and the administrator runs `consumer
 * rotate-key`, `cert renew` or `systemd --managed` as root: a key, certificate
 * or settings file left to root (0600) is one the components can no longer read.
 * Anywhere else (a root-owned folder, or not root) nothing changes.
 */
function takeFolderOwner(fd: number, dir: string): void {
  if (process.getuid?.() !== 0) return;
  const folder = statSync(dir);
  if (folder.uid !== 0 || folder.gid !== 0) fchownSync(fd, folder.uid, folder.gid);
}

/** Writes a secret (private key, generated password, API key) readable by the owner only. */
export function writeSecretFile(path: string, data: string | Uint8Array): void {
  writeFileAtomic(path, data, { mode: 0o600 });
}
