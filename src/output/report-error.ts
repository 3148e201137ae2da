/** How a failed command is shown: a human line plus hint, or one JSON document. */
import type { HospitalApiError } from '../errors/index.js';
import type { Io } from './io.js';

export function reportError(io: Io, command: string, err: HospitalApiError): void {
  if (io.json) {
    io.out(
      JSON.stringify({ ok: false, command, error: { code: err.code, message: err.message, hint: err.hint ?? null } }),
    );
    return;
  }
  process.stderr.write(`hospital-api ${command}: ${err.code}: ${err.message}\n`);
  if (err.hint) process.stderr.write(`  hint: ${err.hint}\n`);
}
