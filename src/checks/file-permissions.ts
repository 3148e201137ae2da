/**
 * Issue #12: the install directory is private to the service's user. Patient
 * data (the FHIR store and its WAL), logs (the audit log names patients),
 * keys and settings must not be readable by other local users: folders 0700,
 * those files 0600. Native: the whole directory; docker: the files the
 * installer writes there and the copies the containers read under docker/
 * (secrets/ and hapi-config/ hold Kong's and HAPI's database passwords and
 * the gateway key, api/ the API's settings, api-logs/ the audit log; owned by
 * each container's user, src/runtime/docker/container-files.ts). The data
 * itself lives in docker volumes.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { installPaths } from '../install-dir/layout.js';
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
    const p = installPaths(ctx.dir);
    const found: Finding[] = [];
    const secrets = [p.apiEnv, p.gatewayKey, p.caKey, p.signerKey, p.installJson];
    if (ctx.config.runtime === 'native') {
      // What the stack itself writes (under its umask 077) must be private file by file; elsewhere a
      // private folder is what keeps its contents from other users (demo data, certificates).
      for (const d of [p.root, p.tls, join(p.root, 'demo')]) loose(d, false, found);
      for (const d of [p.fhirData, p.logs, p.run, p.secrets, join(p.root, 'gateway')]) loose(d, true, found);
    } else {
      loose(p.secrets, true, found);
      // the containers' copies: the folders private, what holds a secret or patient names private file by file
      for (const d of [p.tls, p.docker, join(p.docker, 'api'), join(p.docker, 'api', 'tls')]) loose(d, false, found);
      for (const d of [join(p.docker, 'secrets'), join(p.docker, 'hapi-config'), join(p.docker, 'api-logs')]) loose(d, true, found);
      loose(join(p.docker, 'api', 'hospital-api.env'), false, found);
    }
    for (const f of secrets) loose(f, false, found);
    const unique = [...new Map(found.map((f) => [f.path, f])).values()];
    const caKeyNote = lstatExists(p.caKey)
      ? ` The CA private key is on disk at ${p.caKey}; keep it offline once the certificates are issued (docs/runtime.md, "The CA key").`
      : '';
    if (unique.length === 0) {
      return { status: 'pass', summary: `${ctx.config.runtime === 'native' ? 'folders 0700, data, logs and keys 0600' : 'settings and keys 0600'}`, detail: `checked ${p.root}.${caKeyNote}` };
    }
    const list = unique.slice(0, MAX_LISTED).map((f) => `${relative(p.root, f.path) || '.'} (${f.mode.toString(8).padStart(4, '0')})`);
    return {
      status: 'fail',
      summary: `${unique.length} path(s) readable by other users: ${list.join(', ')}${unique.length > MAX_LISTED ? ', …' : ''}`,
      detail: unique.map((f) => `${f.path} ${f.mode.toString(8)}`).join('; ') + caKeyNote,
      hint:
        ctx.config.runtime === 'native'
          ? `Restart the stack (\`hospital-api down && hospital-api up\` fixes the modes of a native install), or \`chmod -R go-rwx ${p.root}\`.`
          : `\`hospital-api up\` rewrites the containers' copies under ${p.docker} 0600, owned by each container's user; that needs root (sudo) unless the installer's uid is the container's. Other paths: \`chmod go-rwx <path>\`.`,
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
