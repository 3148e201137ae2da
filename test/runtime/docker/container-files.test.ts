/**
 * Issue 12 on docker, without an engine: the copies the kong and hapi
 * containers read are 0600 in 0700 folders owned by the uid each image runs
 * as (resolved from the image once per image id), and verify's
 * file-permissions check names a copy left readable by others. The real
 * engine tier (test/docker-engine/broken-install.test.ts) proves the
 * containers still read them.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { filePermissions } from '../../../src/checks/file-permissions.js';
import type { CheckContext } from '../../../src/checks/types.js';
import type { DockerCli } from '../../../src/runtime/container/compose.js';
import { numericUser, parseId, resolveImageUsers, writeContainerFiles } from '../../../src/runtime/docker/container-files.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { apiUser } from '../../../src/runtime/docker/render.js';
import { tempDir } from '../../helpers/tmp.js';

const ROOT = process.getuid?.() === 0;
const KONG_ID = `sha256:${'a'.repeat(64)}`;
const HAPI_ID = `sha256:${'b'.repeat(64)}`;

/** An install directory with what writeContainerFiles reads. */
function installDir(): string {
  const dir = tempDir('hapi-container-files-');
  const p = installPaths(dir);
  for (const d of [p.secrets, p.tls]) mkdirSync(d, { recursive: true, mode: 0o700 });
  writeFileSync(join(p.secrets, 'kong-pg-password'), 'kong-secret\n', { mode: 0o600 });
  writeFileSync(join(p.secrets, 'hapi-pg-password'), 'hapi-secret\n', { mode: 0o600 });
  writeFileSync(p.gatewayCert, 'CERT\n');
  writeFileSync(p.gatewayKey, 'KEY\n', { mode: 0o600 });
  writeFileSync(p.caCert, 'CA\n');
  writeFileSync(p.apiEnv, 'FHIR_API_KEY=k\n', { mode: 0o600 });
  return dir;
}

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

async function checkOf(dir: string) {
  return filePermissions.run({ dir, paths: installPaths(dir), config: { runtime: 'docker' } } as unknown as CheckContext);
}

/** A docker CLI that knows two images and counts the containers it was asked to run. */
function fakeCli(): DockerCli & { runs: string[][] } {
  const runs: string[][] = [];
  return {
    runs,
    async run(args) {
      if (args[0] === 'image') {
        const ref = args[args.length - 1];
        if (ref === 'kong:x') return { exitCode: 0, stdout: `${KONG_ID} kong\n`, stderr: '' };
        if (ref === 'hapi:x') return { exitCode: 0, stdout: `${HAPI_ID} 65532:65532\n`, stderr: '' };
        return { exitCode: 1, stdout: '', stderr: 'No such image' };
      }
      runs.push(args);
      return { exitCode: 0, stdout: 'uid=999(kong) gid=998(kong) groups=998(kong)\n', stderr: '' };
    },
    async compose() {
      throw new Error('not used');
    },
    async composeStream() {
      throw new Error('not used');
    },
  };
}

describe('the docker copies of the database passwords (issue 12)', () => {
  it('reads uid:gid from `id` output and from numeric image users; a user name needs the image', () => {
    expect(parseId('uid=999(kong) gid=998(kong) groups=998(kong)')).toEqual({ uid: 999, gid: 998 });
    expect(parseId('id: command not found')).toBeNull();
    expect(numericUser('')).toEqual({ uid: 0, gid: 0 });
    expect(numericUser('root')).toEqual({ uid: 0, gid: 0 });
    expect(numericUser('65532:65532')).toEqual({ uid: 65532, gid: 65532 });
    expect(numericUser('1000')).toEqual({ uid: 1000, gid: 1000 });
    expect(numericUser('kong')).toBeUndefined();
    expect(numericUser('65532:nonroot')).toBeUndefined();
  });

  it('resolves a named user by running `id` once per image id, a numeric one without a container', async () => {
    const dir = installDir();
    const cli = fakeCli();
    const images = { kong: 'kong:x', hapi: 'hapi:x' };
    expect(await resolveImageUsers(cli, dir, images)).toEqual({ kong: { uid: 999, gid: 998 }, hapi: { uid: 65532, gid: 65532 } });
    expect(cli.runs).toEqual([['run', '--rm', '--network', 'none', '--entrypoint', 'id', KONG_ID]]);
    // remembered: the next start runs nothing
    expect(await resolveImageUsers(cli, dir, images)).toEqual({ kong: { uid: 999, gid: 998 }, hapi: { uid: 65532, gid: 65532 } });
    expect(cli.runs).toHaveLength(1);
    expect(modeOf(join(installPaths(dir).docker, 'image-users.json'))).toBe('600');
    // an absent image: unresolved, nothing run
    expect((await resolveImageUsers(cli, dir, { kong: 'gone:1', hapi: 'hapi:x' })).kong).toBeNull();
    expect(cli.runs).toHaveLength(1);
  });

  it.runIf(ROOT)('as root: 0600 copies in 0700 folders owned by each image user; verify passes', async () => {
    const dir = installDir();
    writeContainerFiles(dir, { kong: { uid: 999, gid: 998 }, hapi: { uid: 65532, gid: 65532 } });
    const d = installPaths(dir).docker;
    const got = ['secrets', 'secrets/kong-pg-password', 'secrets/gateway.pem', 'secrets/gateway.key', 'hapi-config', 'hapi-config/spring.datasource.password'].map((f) => {
      const st = statSync(join(d, f));
      return [f, modeOf(join(d, f)), st.uid, st.gid];
    });
    expect(got).toEqual([
      ['secrets', '700', 999, 998],
      ['secrets/kong-pg-password', '600', 999, 998],
      ['secrets/gateway.pem', '600', 999, 998],
      ['secrets/gateway.key', '600', 999, 998],
      ['hapi-config', '700', 65532, 65532],
      ['hapi-config/spring.datasource.password', '600', 65532, 65532],
    ]);
    expect(readFileSync(join(d, 'secrets', 'kong-pg-password'), 'utf8')).toBe('kong-secret\n');
    expect(readFileSync(join(d, 'hapi-config', 'spring.datasource.password'), 'utf8')).toBe('hapi-secret');
    expect((await checkOf(dir)).status).toBe('pass');
  });

  it('a copy left 0644 (or an image user that could not be resolved): file-permissions fails naming it', async () => {
    const dir = installDir();
    writeContainerFiles(dir, { kong: null, hapi: null });
    const d = installPaths(dir).docker;
    expect(modeOf(join(d, 'secrets', 'kong-pg-password'))).toBe('644');
    const loose = await checkOf(dir);
    expect(loose.status).toBe('fail');
    expect(loose.summary).toMatch(/^6 path\(s\) readable by other users: /);
    expect(loose.summary).toContain('docker/secrets/kong-pg-password (0644)');
    expect(loose.detail).toContain(`${join(d, 'hapi-config', 'spring.datasource.password')} 644`);
    expect(loose.hint).toContain('root');

    // private again, one copy chmod-ed back: only that one is named
    writeContainerFiles(dir, { kong: { uid: process.getuid!(), gid: process.getgid!() }, hapi: { uid: process.getuid!(), gid: process.getgid!() } });
    expect((await checkOf(dir)).status).toBe('pass');
    chmodSync(join(d, 'hapi-config', 'spring.datasource.password'), 0o640);
    const one = await checkOf(dir);
    expect(one.status).toBe('fail');
    expect(one.summary).toBe('1 path(s) readable by other users: docker/hapi-config/spring.datasource.password (0640)');
  });
});

describe("the FHIR door's token (issue 24)", () => {
  it('an install from before the door gets one on its next start: 0600 in secrets/, copied 0600 for the door, kept after; verify names a loose copy', async () => {
    const dir = installDir();
    const p = installPaths(dir);
    const kept = join(p.secrets, 'fhir-door-token');
    writeContainerFiles(dir, { kong: { uid: process.getuid!(), gid: process.getgid!() }, hapi: { uid: process.getuid!(), gid: process.getgid!() } });
    const token = readFileSync(kept, 'utf8');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
    expect(modeOf(kept)).toBe('600');
    const copy = join(p.docker, 'fhir-door', 'token');
    expect(readFileSync(copy, 'utf8')).toBe(token);
    expect([modeOf(join(p.docker, 'fhir-door')), modeOf(copy)]).toEqual(['700', '600']);
    // the next start keeps it: the door and the CLI keep agreeing
    writeContainerFiles(dir, { kong: { uid: process.getuid!(), gid: process.getgid!() }, hapi: { uid: process.getuid!(), gid: process.getgid!() } });
    expect(readFileSync(kept, 'utf8')).toBe(token);
    expect((await checkOf(dir)).status).toBe('pass');
    chmodSync(copy, 0o644);
    expect((await checkOf(dir)).summary).toBe('1 path(s) readable by other users: docker/fhir-door/token (0644)');
  });
});

describe("the API's metrics token (issue 45)", () => {
  it('kept in secrets/ 0600 (made for an install from before it), copied 0600 into the API\'s folder, named by its container path', async () => {
    const dir = installDir();
    const p = installPaths(dir);
    const readers = { kong: { uid: process.getuid!(), gid: process.getgid!() }, hapi: { uid: process.getuid!(), gid: process.getgid!() } };
    writeContainerFiles(dir, readers);
    const kept = join(p.secrets, 'api-metrics-token');
    const token = readFileSync(kept, 'utf8');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
    const copy = join(p.docker, 'api', 'metrics-token');
    expect([readFileSync(copy, 'utf8'), modeOf(kept), modeOf(copy)]).toEqual([token, '600', '600']);
    const env = parseEnv(readFileSync(join(p.docker, 'api', 'hospital-api.env'), 'utf8'));
    expect(env.METRICS_TOKEN_FILE).toBe('/run/hospital-api/metrics-token');
    // the next start keeps it: the API and the Prometheus that reads secrets/ keep agreeing
    writeContainerFiles(dir, readers);
    expect(readFileSync(copy, 'utf8')).toBe(token);
    expect((await checkOf(dir)).status).toBe('pass');
  });
});

describe('DEMO: the platform stand-in\'s copy of the demo tokens', () => {
  it('a demo install gets docker/platform/demo/tokens.json 0600 in 0700 folders, owned by the API uid; without tokens there is no folder', async () => {
    const dir = installDir();
    const p = installPaths(dir);
    const readers = { kong: { uid: process.getuid!(), gid: process.getgid!() }, hapi: { uid: process.getuid!(), gid: process.getgid!() } };
    writeContainerFiles(dir, readers);
    expect(existsSync(join(p.docker, 'platform'))).toBe(false);
    mkdirSync(join(p.root, 'demo'), { recursive: true, mode: 0o700 });
    writeFileSync(p.demoTokens, '{"demo":true,"tokens":[]}\n', { mode: 0o600 });
    writeContainerFiles(dir, readers);
    const copy = join(p.docker, 'platform', 'demo', 'tokens.json');
    expect(readFileSync(copy, 'utf8')).toBe('{"demo":true,"tokens":[]}\n');
    expect([modeOf(join(p.docker, 'platform')), modeOf(join(p.docker, 'platform', 'demo')), modeOf(copy)]).toEqual(['700', '700', '600']);
    const api = apiUser();
    expect(statSync(copy).uid).toBe(api.uid);
    expect((await checkOf(dir)).status).toBe('pass');
  });
});

describe("the API container's settings file", () => {
  it('carries the patient match settings of hospital-api.env (the API container reads only this copy)', () => {
    const dir = installDir();
    writeFileSync(installPaths(dir).apiEnv, 'FHIR_API_KEY=k\nPLATFORM_IDENTIFIER_SYSTEM="urn:oid:2.16.764.1"\nPLATFORM_ANY_IDENTIFIER_SYSTEM=false\n', { mode: 0o600 });
    writeContainerFiles(dir, { kong: null, hapi: null });
    const copy = parseEnv(readFileSync(join(installPaths(dir).docker, 'api', 'hospital-api.env'), 'utf8'));
    expect(copy).toMatchObject({ PLATFORM_IDENTIFIER_SYSTEM: 'urn:oid:2.16.764.1', PLATFORM_ANY_IDENTIFIER_SYSTEM: 'false' });
  });

  it("gives the API container the install's audit-seal pair (issue 46), never the record signer's key: key 0600, named by container paths; none without the pair", () => {
    const dir = installDir();
    const p = installPaths(dir);
    const api = join(p.docker, 'api');
    // the record signer alone: nothing of it goes in, and the API gets no seal settings
    writeFileSync(p.signerCert, 'SIGNER CERT\n');
    writeFileSync(p.signerKey, 'SIGNER KEY\n', { mode: 0o600 });
    writeContainerFiles(dir, { kong: null, hapi: null });
    const without = parseEnv(readFileSync(join(api, 'hospital-api.env'), 'utf8'));
    expect(without.AUDIT_SEAL_CERT_FILE).toBeUndefined();
    expect(existsSync(join(api, 'tls', 'audit-seal.key'))).toBe(false);
    writeFileSync(p.auditSealCert, 'SEAL CERT\n');
    writeFileSync(p.auditSealKey, 'SEAL KEY\n', { mode: 0o600 });
    writeContainerFiles(dir, { kong: null, hapi: null });
    const copy = parseEnv(readFileSync(join(api, 'hospital-api.env'), 'utf8'));
    expect(copy).toMatchObject({ AUDIT_SEAL_CERT_FILE: '/run/hospital-api/tls/audit-seal.pem', AUDIT_SEAL_KEY_FILE: '/run/hospital-api/tls/audit-seal.key' });
    expect(readFileSync(join(api, 'tls', 'audit-seal.key'), 'utf8')).toBe('SEAL KEY\n');
    expect(modeOf(join(api, 'tls', 'audit-seal.key'))).toBe('600');
    expect(readFileSync(join(api, 'tls', 'audit-seal.pem'), 'utf8')).toBe('SEAL CERT\n');
    // the record signer's key is nowhere in what the API container is given
    const given = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? given(join(d, e.name)) : [readFileSync(join(d, e.name), 'utf8')]));
    expect(given(api).filter((text) => text.includes('SIGNER KEY'))).toEqual([]);
    expect(Object.values(copy)).not.toContain(p.signerKey);
  });
});
