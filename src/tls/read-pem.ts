/** Reads PEM files named by configuration, with a coded error naming the setting. */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';

export function readPemFile(path: string, setting: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError(
      'ERR_CONFIG_INVALID',
      { name: setting, detail: `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` },
      { cause: err },
    );
  }
  if (!/-----BEGIN [A-Z ]+-----/.test(text)) {
    throw new HospitalApiError('ERR_CONFIG_INVALID', { name: setting, detail: `${path} is not a PEM file` });
  }
  return text;
}
