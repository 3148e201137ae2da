/**
 * Scheduled acceptance (issue 46): `verify --scheduled` runs every check, as
 * `verify` does, but writes a signed record only when something an auditor
 * signs on changed since the newest record of the folder (the result, or the
 * gateway's configuration digest) or when that record is a day old: so a
 * route added at night is on record at the next run, and an unchanged site
 * adds one record a day, not one an hour. As continuous compliance scanners
 * (Chef InSpec, OpenSCAP) run on a schedule and report on change.
 */
import { join } from 'node:path';
import type { AcceptanceRecord } from './build.js';
import { recordFiles } from '../../install-dir/reports.js';
import { readRecord } from './read-record.js';

/** An unchanged site writes at most one record in this long. */
export const UNCHANGED_RECORD_EVERY_MS = 24 * 3600 * 1000;

/** Why a scheduled run writes its record, or null when the newest record already says it all. */
export type WriteReason = 'first' | 'result changed' | 'gateway configuration changed' | 'daily' | null;

export function writeReason(previous: Pick<AcceptanceRecord, 'result' | 'gatewayConfigSha256' | 'testedAt'> | null, next: Pick<AcceptanceRecord, 'result' | 'gatewayConfigSha256' | 'testedAt'>): WriteReason {
  if (previous === null) return 'first';
  if (previous.result !== next.result) return 'result changed';
  if (previous.gatewayConfigSha256 !== next.gatewayConfigSha256) return 'gateway configuration changed';
  const age = Date.parse(next.testedAt) - Date.parse(previous.testedAt);
  // a clock set back (age < 0) also writes: the chain then shows the jump
  return !(age >= 0 && age < UNCHANGED_RECORD_EVERY_MS) ? 'daily' : null;
}

/** The newest record of `folder` as written, with its file; null when there is none. A record that cannot be read counts as none: the run writes. */
export function newestRecord(folder: string): { file: string; record: AcceptanceRecord } | null {
  const files = recordFiles(folder);
  const last = files[files.length - 1];
  if (last === undefined) return null;
  const file = join(folder, last);
  try {
    return { file, record: readRecord(file) };
  } catch {
    return null;
  }
}
