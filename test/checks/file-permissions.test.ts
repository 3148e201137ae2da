/**
 * The file-permissions check (issue 12) in process, on real files with real
 * modes, path group by path group: what it must name (a folder or a secret
 * that grants anything to group or others, anything loose inside the folders
 * that hold patient data, logs and state) and what it must leave alone (files
 * directly in the install folder or tls/ under a private folder, symbolic
 * links, paths that are not there). The whole-stack versions are
 * test/runtime/native/install-dir.test.ts (a native install brought up) and
 * test/docker-engine/broken-install.test.ts (a real engine); this file is the
 * one `npm run mutation -- checks` runs against the check.
 */
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { filePermissions } from '../../src/checks/file-permissions.js';
import type { CheckContext, CheckOutcome } from '../../src/checks/types.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

type Runtime = 'native' | 'docker';

/** Creates `path` (a folder when it ends with `/`) with exactly `mode`, parents 0700. */
function put(root: string, path: string, mode: number): string {
  const full = join(root, path);
  if (path.endsWith('/')) {
    mkdirSync(full, { recursive: true });
  } else {
    mkdirSync(dirname(full), { recursive: true, mode: 0o700 });
    writeFileSync(full, 'x\n');
  }
  chmodSync(full, mode);
  return full;
}

/** A private install folder of `runtime` holding what each runtime writes there, every mode private. */
function privateInstall(runtime: Runtime): string {
  const root = join(tempDir(), 'inst');
  mkdirSync(root, { mode: 0o700 });
  chmodSync(root, 0o700);
  const files =
    runtime === 'native'
      ? ['fhir/', 'fhir/fhir.sqlite', 'fhir/fhir.sqlite-wal', 'logs/', 'logs/api.log', 'run/', 'run/state.json', 'secrets/', 'gateway/', 'gateway/state.json', 'demo/']
      : ['secrets/', 'docker/', 'docker/api/', 'docker/api/tls/', 'docker/api/hospital-api.env', 'docker/secrets/', 'docker/secrets/kong-pg-password', 'docker/hapi-config/', 'docker/api-logs/', 'docker/api-logs/audit.log'];
  for (const f of ['install.json', 'hospital-api.env', 'tls/', 'tls/gateway.key', 'tls/record-signer.key', 'tls/audit-seal.key', ...files]) {
    put(root, f, f.endsWith('/') ? 0o700 : 0o600);
  }
  return root;
}

function check(root: string, runtime: Runtime): Promise<CheckOutcome> {
  return filePermissions.run({ dir: root, paths: installPaths(root), config: { runtime } } as unknown as CheckContext);
}

describe('file-permissions: a private install passes', () => {
  it.each<Runtime>(['native', 'docker'])('%s: every folder 0700 and every file 0600 passes, saying what it checked', async (runtime) => {
    const root = privateInstall(runtime);
    const r = await check(root, runtime);
    expect(r.status).toBe('pass');
    expect(r.summary).toBe(runtime === 'native' ? 'folders 0700, data, logs and keys 0600' : 'settings and keys 0600');
    expect(r.detail).toBe(`checked ${root}.`);
  });

  it('an install with none of the folders yet (nothing to protect) passes', async () => {
    const root = join(tempDir(), 'inst');
    mkdirSync(root, { mode: 0o700 });
    chmodSync(root, 0o700);
    expect((await check(root, 'native')).status).toBe('pass');
    expect((await check(root, 'docker')).status).toBe('pass');
  });

  it('read-only modes (0400, 0500) are private too', async () => {
    const root = privateInstall('native');
    chmodSync(join(root, 'fhir', 'fhir.sqlite'), 0o400);
    chmodSync(join(root, 'run'), 0o500);
    expect((await check(root, 'native')).status).toBe('pass');
    chmodSync(join(root, 'run'), 0o700);
  });
});

describe('file-permissions: native, path group by path group', () => {
  it.each([
    ['the install folder itself', '', 0o755, '. (0755)'],
    ['tls/', 'tls', 0o750, 'tls (0750)'],
    ['demo/', 'demo', 0o705, 'demo (0705)'],
    ['the FHIR store', 'fhir/fhir.sqlite', 0o644, 'fhir/fhir.sqlite (0644)'],
    ['its WAL (group only)', 'fhir/fhir.sqlite-wal', 0o640, 'fhir/fhir.sqlite-wal (0640)'],
    ['a log (others only)', 'logs/api.log', 0o604, 'logs/api.log (0604)'],
    ['run/', 'run', 0o711, 'run (0711)'],
    ['the supervisor state', 'run/state.json', 0o644, 'run/state.json (0644)'],
    ['the gateway state', 'gateway/state.json', 0o660, 'gateway/state.json (0660)'],
    ['secrets/', 'secrets', 0o701, 'secrets (0701)'],
    ['install.json', 'install.json', 0o644, 'install.json (0644)'],
    ['the API settings', 'hospital-api.env', 0o620, 'hospital-api.env (0620)'],
    ['the gateway key', 'tls/gateway.key', 0o644, 'tls/gateway.key (0644)'],
    ['the record signer key', 'tls/record-signer.key', 0o602, 'tls/record-signer.key (0602)'],
    ['the audit-seal key', 'tls/audit-seal.key', 0o640, 'tls/audit-seal.key (0640)'],
  ])('names %s when it grants anything to group or others', async (_what, path, mode, named) => {
    const root = privateInstall('native');
    chmodSync(join(root, path), mode);
    const r = await check(root, 'native');
    expect(r.status).toBe('fail');
    expect(r.summary).toBe(`1 path(s) readable by other users: ${named}`);
    expect(r.detail).toBe(`${join(root, path)} ${mode.toString(8)}`);
    expect(r.hint).toBe(`Restart the stack (\`hospital-api down && hospital-api up\` fixes the modes of a native install), or \`chmod -R go-rwx ${root}\`.`);
  });

  it('names what is nested deep in the data, log, state, secret and gateway folders', async () => {
    const root = privateInstall('native');
    for (const f of ['fhir/a/b/c.bin', 'logs/old/x.log', 'run/x/y', 'secrets/k/pw', 'gateway/g/z']) put(root, f, 0o644);
    const r = await check(root, 'native');
    expect(r.status).toBe('fail');
    expect(r.summary).toMatch(/^5 path\(s\) readable by other users: /);
    for (const f of ['fhir/a/b/c.bin', 'logs/old/x.log', 'run/x/y', 'secrets/k/pw', 'gateway/g/z']) expect(r.detail).toContain(`${join(root, f)} 644`);
  });

  it('leaves alone files directly in the install folder, tls/ and demo/ (their private folder keeps them), and the CA certificate', async () => {
    const root = privateInstall('native');
    put(root, 'README.txt', 0o644);
    put(root, 'tls/ca.pem', 0o644);
    put(root, 'tls/gateway.pem', 0o644);
    put(root, 'demo/patients.json', 0o644);
    put(root, 'demo/sub/', 0o755);
    expect((await check(root, 'native')).status).toBe('pass');
  });

  it('does not follow a symbolic link, inside a data folder or as a secret', async () => {
    const root = privateInstall('native');
    const outside = put(tempDir(), 'open.txt', 0o644);
    const openDir = join(tempDir(), 'open');
    mkdirSync(openDir, { mode: 0o755 });
    chmodSync(openDir, 0o755);
    put(openDir, 'inside.txt', 0o644);
    symlinkSync(outside, join(root, 'logs', 'link.log'));
    symlinkSync(openDir, join(root, 'fhir', 'linked'));
    expect((await check(root, 'native')).status).toBe('pass');
  });

  it('lists five paths in the summary and every path in the detail', async () => {
    const root = privateInstall('native');
    for (const f of ['logs/1', 'logs/2', 'logs/3', 'logs/4', 'logs/5']) put(root, f, 0o644);
    const five = await check(root, 'native');
    expect(five.summary).toMatch(/^5 path\(s\) readable by other users: [^…]*$/);
    expect(five.summary.split(', ')).toHaveLength(5);
    put(root, 'logs/6', 0o644);
    const six = await check(root, 'native');
    expect(six.summary).toMatch(/^6 path\(s\) readable by other users: .*, …$/);
    expect(six.summary.split(', ')).toHaveLength(6); // five paths and the ellipsis
    expect(six.detail!.split('; ')).toHaveLength(6);
  });

  it('says the CA key is on disk, passing or failing', async () => {
    const root = privateInstall('native');
    const caKey = put(root, 'tls/ca.key', 0o600);
    const note = ` The CA private key is on disk at ${caKey}; keep it offline once the certificates are issued (docs/runtime.md, "The CA key").`;
    expect((await check(root, 'native')).detail).toBe(`checked ${root}.${note}`);
    chmodSync(caKey, 0o644);
    const r = await check(root, 'native');
    expect(r.summary).toBe('1 path(s) readable by other users: tls/ca.key (0644)');
    expect(r.detail).toBe(`${caKey} 644${note}`);
  });
});

describe('file-permissions: docker, path group by path group', () => {
  it.each([
    ['secrets/', 'secrets', 0o755, 'secrets (0755)'],
    ['tls/', 'tls', 0o750, 'tls (0750)'],
    ['docker/', 'docker', 0o755, 'docker (0755)'],
    ['docker/api/', 'docker/api', 0o755, 'docker/api (0755)'],
    ['docker/api/tls/', 'docker/api/tls', 0o711, 'docker/api/tls (0711)'],
    ["the API container's settings", 'docker/api/hospital-api.env', 0o644, 'docker/api/hospital-api.env (0644)'],
    ["Kong's database password copy", 'docker/secrets/kong-pg-password', 0o644, 'docker/secrets/kong-pg-password (0644)'],
    ["the API container's audit log", 'docker/api-logs/audit.log', 0o640, 'docker/api-logs/audit.log (0640)'],
    ['hapi-config/', 'docker/hapi-config', 0o755, 'docker/hapi-config (0755)'],
    ['install.json', 'install.json', 0o644, 'install.json (0644)'],
    ['the gateway key', 'tls/gateway.key', 0o604, 'tls/gateway.key (0604)'],
    ['the audit-seal key', 'tls/audit-seal.key', 0o604, 'tls/audit-seal.key (0604)'],
  ])('names %s when it grants anything to group or others', async (_what, path, mode, named) => {
    const root = privateInstall('docker');
    chmodSync(join(root, path), mode);
    const r = await check(root, 'docker');
    expect(r.status).toBe('fail');
    expect(r.summary).toBe(`1 path(s) readable by other users: ${named}`);
    expect(r.hint).toBe(
      `\`hospital-api up\` rewrites the containers' copies under ${join(root, 'docker')} 0600, owned by each container's user; that needs root (sudo) unless the installer's uid is the container's. Other paths: \`chmod go-rwx <path>\`.`,
    );
  });

  it('names what is nested in secrets/ and the containers\' secret and log folders, not the install folder itself or docker/api/tls/ files', async () => {
    const root = privateInstall('docker');
    chmodSync(root, 0o755); // the docker install folder is not checked itself: its private parts are
    put(root, 'docker/compose.yaml', 0o644);
    put(root, 'docker/api/tls/ca.pem', 0o644);
    expect((await check(root, 'docker')).status).toBe('pass');
    for (const f of ['secrets/a/b', 'docker/secrets/x/y', 'docker/hapi-config/p/q', 'docker/api-logs/old/z']) put(root, f, 0o644);
    const r = await check(root, 'docker');
    expect(r.summary).toMatch(/^4 path\(s\) readable by other users: /);
    for (const f of ['secrets/a/b', 'docker/secrets/x/y', 'docker/hapi-config/p/q', 'docker/api-logs/old/z']) expect(r.detail).toContain(`${join(root, f)} 644`);
  });

  it('native folders are not a docker install\'s concern, and docker folders not a native one\'s', async () => {
    const docker = privateInstall('docker');
    put(docker, 'logs/x.log', 0o644);
    put(docker, 'fhir/', 0o755);
    expect((await check(docker, 'docker')).status).toBe('pass');
    const native = privateInstall('native');
    put(native, 'docker/secrets/kong-pg-password', 0o644);
    expect((await check(native, 'native')).status).toBe('pass');
    expect(installPaths(native).docker).toBe(join(native, 'docker'));
  });
});
