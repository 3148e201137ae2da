/**
 * A bearer token kept in a file (the metrics token Prometheus sends, issue 45), read as node_exporter's
 * web config reads a password file: refused when other accounts may read the file (mode o+r: a token
 * anyone can read protects nothing), or when it is not one token of 16 to 4096 printable ASCII characters.
 * The one reader for every listener that takes such a file (the Hospital API's METRICS_TOKEN_FILE, the
 * gateway's --status-token-file).
 */
import { readFileSync, statSync } from 'node:fs';

/** @throws TokenFileError whose message says what is wrong with the file, named as `shown` (as the user gave it) */
export function readTokenFile(path: string, shown = path): string {
  let token: string;
  try {
    if ((statSync(path).mode & 0o007) !== 0) throw new TokenFileError(`${shown} may be read by any account (chmod o-rwx ${shown}; 0600 or 0640)`);
    token = readFileSync(path, 'utf8').trim();
  } catch (err) {
    if (err instanceof TokenFileError) throw err;
    throw new TokenFileError(`cannot read ${shown}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!/^[\x21-\x7e]{16,4096}$/.test(token)) throw new TokenFileError(`${shown} must hold one token of 16 to 4096 printable ASCII characters`);
  return token;
}

export class TokenFileError extends Error {}
