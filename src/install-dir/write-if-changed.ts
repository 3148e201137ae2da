/**
 * How every file of the install directory is written: atomically and only when
 * its content changes (so a rerun with nothing new changes nothing), secrets
 * with mode 0600 kept even when unchanged. Install, restore, `systemd` and the
 * systemd runtime's units share it.
 */
import { chmodSync, existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic, writeSecretFile } from '../util/atomic-write.js';

export type FileChange = { path: string; change: 'created' | 'updated' | 'unchanged' };

/** Writes when different; secrets get 0600 (and keep it even when unchanged). */
export function writeIfChanged(path: string, content: string, secret = false): FileChange {
  const before = existsSync(path) ? readFileSync(path, 'utf8') : null;
  if (before === content) {
    if (secret) chmodSync(path, 0o600);
    return { path, change: 'unchanged' };
  }
  if (secret) writeSecretFile(path, content);
  else writeFileAtomic(path, content);
  return { path, change: before === null ? 'created' : 'updated' };
}
