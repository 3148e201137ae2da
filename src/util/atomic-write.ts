/**
 * Write-temp-then-rename: a reader (or a crash) sees the old file or the new
 * one, never half of either. The temp file is fsynced before the rename and
 * created with the final mode, so a key is never readable by others even briefly.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
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

/** Writes a secret (private key, generated password, API key) readable by the owner only. */
export function writeSecretFile(path: string, data: string | Uint8Array): void {
  writeFileAtomic(path, data, { mode: 0o600 });
}
