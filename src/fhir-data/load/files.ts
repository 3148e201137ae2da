/**
 * The files `fhir load` reads: each path as given, and a directory as its own *.json
 * and *.ndjson files in name order (so `00-shared.json` lands before `01-patients.ndjson`,
 * as `fhir generate` names them). Only regular files directly in the directory: no
 * recursion, and no symbolic links, so nothing outside the folder is read by accident.
 * Hidden files (the resume state `.fhir-load-state.json` lives there) and the `manifest.json`
 * that `fhir generate` writes next to its data are not FHIR data.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';

const LOADABLE = /\.(json|ndjson)$/i;
const NOT_DATA = new Set(['manifest.json']);

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // a missing file is reported where its size is read
  }
}

/** Absolute paths to load, directories expanded. @throws ERR_FILE_READ, ERR_USAGE (a directory with nothing to load) */
export function loadFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const given of paths) {
    const path = resolve(given);
    if (!isDirectory(path)) {
      out.push(path);
      continue;
    }
    let names: string[];
    try {
      names = readdirSync(path, { withFileTypes: true })
        .filter((e) => e.isFile() && !e.name.startsWith('.') && LOADABLE.test(e.name) && !NOT_DATA.has(e.name.toLowerCase()))
        .map((e) => e.name)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as Error).message }, { cause: err });
    }
    if (names.length === 0) throw new HospitalApiError('ERR_USAGE', { detail: `${path} is a directory with no .json or .ndjson file in it` });
    out.push(...names.map((n) => join(path, n)));
  }
  return out;
}
