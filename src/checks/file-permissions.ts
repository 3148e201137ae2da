/**
 * Issue #12: the install directory is private to the service's user. Patient
 * data (the FHIR store and its WAL), logs (the audit log names patients),
 * keys and settings must not be readable by other local users: folders 0700,
 * those files 0600, as the runtime's profile lists them (privacy()). Native: the whole directory; docker: the files the
 * installer writes there and the copies the containers read under docker/
 * (secrets/ and hapi-config/ hold Kong's and HAPI's database passwords and
 * the gateway key, api/ the API's settings, api-logs/ the audit log; owned by
 * each container's user, src/runtime/docker/container-files.ts). The data
 * itself lives in docker volumes.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { profileOf } from '../runtime/profiles.js';
import type { Check } from './types.js';

const MAX_LISTED = 5;

interface Finding {
  path: string;
  mode: number;
}

/** Entries under `path` (itself included when `self`) whose mode grants anything to group or others. */
function loose(path: string, recursive: boolean, out: Finding[]): void {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return; // not there: nothing to protect
  }
  if (st.isSymbolicLink()) return;
  if ((st.mode & 0o077) !== 0) out.push({ path, mode: st.mode & 0o777 });
  if (st.isDirectory() && recursive) {
    for (const name of readdirSync(path)) loose(join(path, name), true, out);
  }
}

export const filePermissions: Check = {
  id: 'file-permissions',
  spec: 'extra',
  title: 'Install directory, data, logs and keys are private to the service user',
  mandatory: true,
  async run(ctx) {
    const p = ctx.paths;
    const found: Finding[] = [];
    const secrets = [p.apiEnv, p.gatewayKey, p.caKey, p.signerKey, p.auditSealKey, p.installJson];
    const privacy = profileOf(ctx.config.runtime).privacy(p);
    for (const d of privacy.paths) loose(d.path, d.recursive, found);
    for (const f of secrets) loose(f, false, found);
    const unique = [...new Map(found.map((f) => [f.path, f])).values()];
    const caKeyNote = lstatExists(p.caKey)
      ? ` The CA private key is on disk at ${p.caKey}; keep it offline once the certificates are issued (docs/runtime.md, "The CA key").`
      : '';
    if (unique.length === 0) {
      return { status: 'pass', summary: privacy.summary, detail: `checked ${p.root}.${caKeyNote}` };
    }
    const list = unique.slice(0, MAX_LISTED).map((f) => `${relative(p.root, f.path) || '.'} (${f.mode.toString(8).padStart(4, '0')})`);
    return {
      status: 'fail',
      summary: `${unique.length} path(s) readable by other users: ${list.join(', ')}${unique.length > MAX_LISTED ? ', …' : ''}`,
      detail: unique.map((f) => `${f.path} ${f.mode.toString(8)}`).join('; ') + caKeyNote,
      hint: privacy.hint,
    };
  },
};

function lstatExists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
