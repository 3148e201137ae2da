/**
 * install, in process: the files it writes, provisioning in the spec's order
 * against the project's gateway admin API, idempotency, a killed run completed by a rerun,
 * and bad input that changes nothing.
 */
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { nativeProfile } from '../../src/runtime/native/profile.js';
import { afterAll, describe, expect, it } from 'vitest';
import { runInstall } from '../../src/install/run.js';
import type { InstallFlags } from '../../src/install/options.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { issueCertificate } from '../../src/tls/pki.js';
import { chainsTo, coversHost, issueAuditSeal } from '../../src/install/tls.js';
import { upgradeAuditSeal } from '../../src/install/audit-seal-upgrade.js';
import { updateEnvValues } from '../../src/install/files.js';
import { HospitalApiError } from '../../src/errors/index.js';
import { makeTestPki } from '../helpers/pki.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { closeGatewayAdmins, gatewayAdmin, type GatewayAdmin } from '../helpers/gateway-admin.js';
import { fakeRuntime } from './stand-ins.js';
import { gatewayDrift } from '../../src/checks/gateway-drift.js';
import { createRunFacts } from '../../src/checks/facts.js';
import type { CheckContext } from '../../src/checks/types.js';

afterAll(async () => {
  await closeGatewayAdmins();
  removeTempDirs();
});

const base = (dir: string): InstallFlags => ({ runtime: 'native', dir, host: ['127.0.0.1'], generateCa: true, apiPort: '19000', fhirPort: '18080' });
const install = (flags: InstallFlags, kong: GatewayAdmin) => runInstall(flags, { log: () => {}, openRuntime: () => fakeRuntime(kong), prepare: async () => {} });

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(p, `${statSync(p).mtimeMs}:${readFileSync(p, 'utf8')}`);
    }
  };
  walk(dir);
  return out;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof HospitalApiError ? err.code : `not coded: ${String(err)}`;
  }
  return 'no error';
}

describe('install (native, generated CA)', () => {
  it('writes the install directory: settings, TLS material, keys 0600, no secret in install.json', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    const result = await install(base(dir), kong);
    const p = installPaths(dir);
    for (const key of [p.caKey, p.gatewayKey, p.signerKey, p.auditSealKey, p.apiEnv]) expect(statSync(key).mode & 0o777, key).toBe(0o600);
    const env = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    // the API seals its audit log with its own key (issue 46), never with the record signer's
    expect([env.AUDIT_SEAL_CERT_FILE, env.AUDIT_SEAL_KEY_FILE]).toEqual([p.auditSealCert, p.auditSealKey]);
    expect(Object.values(env)).not.toContain(p.signerKey);
    expect(Object.values(nativeProfile.apiEnv(p, readInstallConfig(dir)))).not.toContain(p.signerKey);
    const seal = new X509Certificate(readFileSync(p.auditSealCert, 'utf8'));
    expect(seal.subject).toBe('CN=hospital-api audit seal');
    expect(chainsTo(seal.toString(), readFileSync(p.caCert, 'utf8'))).toBe(true);
    expect(seal.checkPrivateKey(createPrivateKey(readFileSync(p.auditSealKey, 'utf8')))).toBe(true);
    expect(readFileSync(p.auditSealKey, 'utf8')).not.toBe(readFileSync(p.signerKey, 'utf8'));
    expect(env.FHIR_BASE_URL).toBe(`https://127.0.0.1:${readInstallConfig(dir).ports.gatewayHttps}/fhir-api-key-auth`);
    expect(env.FHIR_CA_FILE).toBe(p.caCert);
    expect(env.AUDIT_LOG).toBe(join(p.logs, 'audit.log'));
    expect(env.PLATFORM_API_URL).toBeUndefined();
    expect(readFileSync(p.apiEnv, 'utf8')).toContain('PLATFORM_API_URL is not set yet');
    expect(result.platformApiUrlSet).toBe(false);
    expect(env.PLATFORM_IDENTIFIER_SYSTEM).toBeUndefined();
    expect(readFileSync(p.apiEnv, 'utf8')).toContain('PLATFORM_IDENTIFIER_SYSTEM is not set yet');
    expect(result.identifierSystemSet).toBe(false);
    const gw = readFileSync(p.gatewayCert, 'utf8');
    expect(chainsTo(gw, readFileSync(p.caCert, 'utf8'))).toBe(true);
    expect(chainsTo(readFileSync(p.signerCert, 'utf8'), readFileSync(p.caCert, 'utf8'))).toBe(true);
    expect(readFileSync(p.installJson, 'utf8')).not.toMatch(/PRIVATE KEY|password/i);
  });

  it('provisions in the spec order, PUT by name, with hide_credentials, and creates no consumer', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    const result = await install({ ...base(dir), corsOrigin: ['https://portal.example'] }, kong);
    expect(result.provisioning.map((s) => s.name)).toEqual([
      'fhir-api', 'fhir-api/basic-auth', 'fhir-api/cors', 'fhir-api/request-size-limiting', 'fhir-api-route',
      'fhir-api-key-auth', 'fhir-api-key-auth/key-auth', 'fhir-api-key-auth/request-size-limiting', 'fhir-api-key-auth-route', 'prometheus',
    ]);
    expect(result.provisioning.every((s) => s.change === 'created')).toBe(true);
    const writes = kong.calls.filter((c) => !c.startsWith('GET'));
    expect(writes).toEqual([
      'PUT /services/fhir-api', ...Array.from({ length: 3 }, () => expect.stringMatching(/^POST \/services\/.+\/plugins$/)),
      'PUT /routes/fhir-api-route', 'PUT /services/fhir-api-key-auth', ...Array.from({ length: 2 }, () => expect.stringMatching(/^POST \/services\/.+\/plugins$/)),
      'PUT /routes/fhir-api-key-auth-route', 'POST /plugins',
    ]);
    const svc = (name: string) => kong.state().services.find((s) => s.name === name)!;
    expect(svc('fhir-api')).toMatchObject({ protocol: 'http', host: '127.0.0.1', port: 18080, path: '/fhir' });
    const plugin = (name: string) => kong.state().plugins.find((p) => p.name === name)!;
    expect(plugin('basic-auth')).toMatchObject({ service: { id: svc('fhir-api').id }, config: { hide_credentials: true } });
    expect(plugin('cors')).toMatchObject({ service: { id: svc('fhir-api').id }, config: { origins: ['https://portal.example'] } });
    expect(plugin('key-auth')).toMatchObject({ service: { id: svc('fhir-api-key-auth').id }, config: { hide_credentials: true, key_names: ['apikey'] } });
    // Issue 24: both FHIR services limit request bodies, every field of Kong's schema set
    for (const name of ['fhir-api', 'fhir-api-key-auth']) {
      const limits = kong.state().plugins.filter((p) => p.name === 'request-size-limiting' && p.service?.id === svc(name).id);
      expect(limits.map((p) => p.config), name).toEqual([{ allowed_payload_size: 50, size_unit: 'megabytes', require_content_length: false }]);
    }
    // Issue 26: Kong's prometheus plugin, global, with what the shipped dashboard reads.
    expect(plugin('prometheus')).toMatchObject({ service: null, route: null, consumer: null, config: { status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, upstream_health_metrics: true } });
    expect(kong.state().routes.find((r) => r.name === 'fhir-api-key-auth-route')).toMatchObject({ paths: ['/fhir-api-key-auth'], protocols: ['https'], service: { id: svc('fhir-api-key-auth').id } });
    expect(kong.state().routes.find((r) => r.name === 'fhir-api-route')).toMatchObject({ paths: ['/fhir-api'], protocols: ['https'] });
    expect(kong.state().consumers).toEqual([]);
    expect(kong.calls.some((c) => c.includes('/consumers'))).toBe(false);
  });

  it('changes nothing when run twice: same files (mtime too), no admin writes', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    await install(base(dir), kong);
    const before = snapshot(dir);
    const ids = JSON.stringify([kong.state().services, kong.state().routes, kong.state().plugins]);
    kong.calls.length = 0;
    const again = await install(base(dir), kong);
    expect(again.files.every((f) => f.change === 'unchanged')).toBe(true);
    expect(again.provisioning.every((s) => s.change === 'unchanged')).toBe(true);
    expect(kong.calls.filter((c) => !c.startsWith('GET'))).toEqual([]);
    expect(snapshot(dir)).toEqual(before);
    expect(JSON.stringify([kong.state().services, kong.state().routes, kong.state().plugins])).toBe(ids);
    // a rerun without flags keeps the earlier choices
    await install({ dir }, kong);
    expect(snapshot(dir)).toEqual(before);
  });

  it('issue 23: a rerun puts back every declared field, not only those a first run set, and names them; the drift check agrees before and after', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    await install(base(dir), kong);
    const ctx = () => {
      const c = { config: readInstallConfig(dir), runtime: fakeRuntime(kong), caPem: '' };
      return { ...c, facts: createRunFacts(c) } as unknown as CheckContext;
    };
    expect((await gatewayDrift.run(ctx())).status).toBe('pass');
    const plugin = (name: string) => kong.state().plugins.find((p) => p.name === name)!;
    // Keys in URLs end up in access logs: key_in_query is false, though Kong's default is true
    expect(plugin('key-auth').config).toMatchObject({ key_in_query: false, anonymous: null, key_names: ['apikey'], hide_credentials: true });
    expect(plugin('cors').config).toMatchObject({ credentials: false, methods: ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS'] });
    const consumer = (await kong.admin('POST', '/consumers', { username: 'anyone' })).body as { id: string };
    const patch = async (name: string, body: unknown) => expect((await kong.admin('PATCH', `/plugins/${plugin(name).id}`, body)).status).toBe(200);
    await patch('cors', { config: { origins: ['*'], credentials: true, methods: ['GET', 'TRACE'] } });
    await patch('key-auth', { config: { key_in_query: true, anonymous: consumer.id } });
    await patch('basic-auth', { enabled: false, config: { hide_credentials: false } });
    const keyAuthService = kong.state().services.find((s) => s.name === 'fhir-api-key-auth')!;
    const sizeLimit = kong.state().plugins.find((p) => p.name === 'request-size-limiting' && p.service?.id === keyAuthService.id)!;
    expect((await kong.admin('PATCH', `/plugins/${sizeLimit.id}`, { config: { allowed_payload_size: 128 } })).status).toBe(200);
    const drift = await gatewayDrift.run(ctx());
    expect(drift.status).toBe('fail');
    expect(drift.summary.split('; ')).toEqual([
      'plugin fhir-api/basic-auth: enabled is false, declared true',
      'plugin fhir-api/basic-auth: config.hide_credentials is false, declared true',
      'plugin fhir-api/cors: config.methods is ["GET","TRACE"], declared ["GET","HEAD","PUT","PATCH","POST","DELETE","OPTIONS"]',
      'plugin fhir-api/cors: config.credentials is true, declared false',
      `plugin fhir-api-key-auth/key-auth: config.anonymous is "${consumer.id}", declared null`,
      'plugin fhir-api-key-auth/key-auth: config.key_in_query is true, declared false',
      'plugin fhir-api-key-auth/request-size-limiting: config.allowed_payload_size is 128, declared 50',
      `plugin cors ${plugin('cors').id}: origin * with credentials true`,
    ]);
    const rerun = await install(base(dir), kong);
    expect(rerun.provisioning.filter((s) => s.change !== 'unchanged')).toEqual([
      { kind: 'plugin', name: 'fhir-api/basic-auth', change: 'updated', fields: ['config.hide_credentials', 'enabled'] },
      { kind: 'plugin', name: 'fhir-api/cors', change: 'updated', fields: ['config.methods', 'config.credentials'] },
      { kind: 'plugin', name: 'fhir-api-key-auth/key-auth', change: 'updated', fields: ['config.anonymous', 'config.key_in_query'] },
      { kind: 'plugin', name: 'fhir-api-key-auth/request-size-limiting', change: 'updated', fields: ['config.allowed_payload_size'] },
    ]);
    expect((await gatewayDrift.run(ctx())).status).toBe('pass');
    // the consumer install did not make is left alone
    expect(kong.state().consumers.map((c) => c.username)).toEqual(['anyone']);
  });

  it('a run killed part-way is completed by a rerun, without duplicates', async () => {
    for (const cut of [1, 4, 7, 11]) {
      const dir = join(tempDir(), 'inst');
      const kong = await gatewayAdmin();
      kong.failAfter = cut;
      await expect(install(base(dir), kong)).rejects.toThrow(/killed part-way/);
      kong.failAfter = null;
      const result = await install(base(dir), kong);
      expect(result.provisioning).toHaveLength(10);
      expect(kong.state().services.map((s) => s.name).sort()).toEqual(['fhir-api', 'fhir-api-key-auth']);
      expect(kong.state().routes.map((r) => r.name).sort()).toEqual(['fhir-api-key-auth-route', 'fhir-api-route']);
      expect(kong.state().plugins.map((p) => p.name).sort()).toEqual(['basic-auth', 'cors', 'key-auth', 'prometheus', 'request-size-limiting', 'request-size-limiting']);
    }
  });

  it('keeps a hand-filled PLATFORM_API_URL and FHIR_API_KEY on rerun', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    await install(base(dir), kong);
    const p = installPaths(dir);
    writeFileSync(p.apiEnv, readFileSync(p.apiEnv, 'utf8') + 'PLATFORM_API_URL="https://platform.example/api"\nFHIR_API_KEY="k-1234567890abcdef"\n');
    const rerun = await install(base(dir), kong);
    expect(rerun.platformApiUrlSet).toBe(true);
    const env = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    expect(env.PLATFORM_API_URL).toBe('https://platform.example/api');
    expect(env.FHIR_API_KEY).toBe('k-1234567890abcdef');
    expect(statSync(p.apiEnv).mode & 0o777).toBe(0o600);
  });
});

describe('install: the platform identifier system', () => {
  it('writes --identifier-system to PLATFORM_IDENTIFIER_SYSTEM, keeps it on a rerun without it, and --any-identifier-system replaces it', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    const p = installPaths(dir);
    const result = await install({ ...base(dir), identifierSystem: 'https://platform.example/care-id' }, kong);
    expect(result.identifierSystemSet).toBe(true);
    expect(parseEnv(readFileSync(p.apiEnv, 'utf8')).PLATFORM_IDENTIFIER_SYSTEM).toBe('https://platform.example/care-id');
    expect(readFileSync(p.apiEnv, 'utf8')).not.toContain('is not set yet: rerun `hospital-api install --identifier-system');
    await install(base(dir), kong);
    expect(parseEnv(readFileSync(p.apiEnv, 'utf8')).PLATFORM_IDENTIFIER_SYSTEM).toBe('https://platform.example/care-id');
    await install({ ...base(dir), anyIdentifierSystem: true }, kong);
    const env = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    expect(env.PLATFORM_IDENTIFIER_SYSTEM).toBeUndefined();
    expect(env.PLATFORM_ANY_IDENTIFIER_SYSTEM).toBe('true');
    await install({ ...base(dir), identifierSystem: 'urn:oid:2.16.764.1' }, kong);
    expect(parseEnv(readFileSync(p.apiEnv, 'utf8'))).toMatchObject({ PLATFORM_IDENTIFIER_SYSTEM: 'urn:oid:2.16.764.1' });
    expect(parseEnv(readFileSync(p.apiEnv, 'utf8')).PLATFORM_ANY_IDENTIFIER_SYSTEM).toBeUndefined();
  });

  it('refuses a system that is not an absolute URI, or both flags, and changes nothing', async () => {
    const dir = join(tempDir(), 'inst');
    const kong = await gatewayAdmin();
    await install({ ...base(dir), identifierSystem: 'urn:x' }, kong);
    const before = snapshot(dir);
    expect(await codeOf(install({ ...base(dir), identifierSystem: 'care id' }, kong))).toBe('ERR_INSTALL_BAD_OPTION');
    expect(await codeOf(install({ ...base(dir), identifierSystem: 'urn:y', anyIdentifierSystem: true }, kong))).toBe('ERR_INSTALL_BAD_OPTION');
    expect(snapshot(dir)).toEqual(before);
  });
});

describe('install: bad input changes nothing', () => {
  it.each([
    [{ apiPort: '70000' }, 'ERR_INSTALL_BAD_OPTION'],
    [{ apiPort: '9100', fhirPort: '9100' }, 'ERR_INSTALL_BAD_OPTION'],
    [{ host: ['bad host!'] }, 'ERR_INSTALL_BAD_OPTION'],
    [{ runtime: 'podman' }, 'ERR_INSTALL_BAD_OPTION'],
    [{ platformUrl: 'ftp://x' }, 'ERR_INSTALL_BAD_OPTION'],
    [{ identifierSystem: 'no-scheme' }, 'ERR_INSTALL_BAD_OPTION'],
    [{ generateCa: false }, 'ERR_INSTALL_TLS_OPTIONS'],
    [{ generateCa: true, ca: '/etc/hostname' }, 'ERR_INSTALL_TLS_OPTIONS'],
    [{ generateCa: false, ca: '/etc/hostname' }, 'ERR_INSTALL_TLS_OPTIONS'],
  ] as Array<[Partial<InstallFlags>, string]>)('%j → %s, no directory', async (flags, code) => {
    const dir = join(tempDir(), 'inst');
    expect(await codeOf(install({ ...base(dir), ...flags }, await gatewayAdmin()))).toBe(code);
    expect(existsSync(dir)).toBe(false);
  });

  it("the hospital's own certificate must chain to its CA, its key must match, and it must name the host", async () => {
    const t = tempDir();
    const pki = makeTestPki(t);
    const other = issueCertificate(pki.otherCa, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    writeFileSync(join(t, 'other.pem'), other.certPem);
    writeFileSync(join(t, 'other.key'), other.keyPem);
    writeFileSync(join(t, 'ca.key'), pki.ca.keyPem);
    const own = (extra: Partial<InstallFlags>, dir: string): InstallFlags => ({
      ...base(dir), generateCa: false, ca: pki.files.ca, cert: pki.files.cert, key: pki.files.key, caKey: join(t, 'ca.key'), ...extra,
    });
    const d1 = join(t, 'a');
    expect(await codeOf(install(own({ cert: join(t, 'other.pem'), key: join(t, 'other.key') }, d1), await gatewayAdmin()))).toBe('ERR_INSTALL_TLS_MISMATCH');
    expect(await codeOf(install(own({ key: join(t, 'other.key') }, d1), await gatewayAdmin()))).toBe('ERR_INSTALL_TLS_MISMATCH');
    expect(await codeOf(install(own({ host: ['fhir.hospital.example'] }, d1), await gatewayAdmin()))).toBe('ERR_INSTALL_TLS_MISMATCH');
    expect(await codeOf(install(own({ caKey: undefined }, d1), await gatewayAdmin()))).toBe('ERR_INSTALL_TLS_OPTIONS');
    expect(existsSync(d1)).toBe(false);
    // accepted: the CA key issues the record signer once and is not stored
    const d2 = join(t, 'b');
    const result = await install(own({}, d2), await gatewayAdmin());
    expect(result.caGenerated).toBe(false);
    const p = installPaths(d2);
    expect(existsSync(p.caKey)).toBe(false);
    expect(readFileSync(p.gatewayCert, 'utf8')).toBe(pki.server.certPem);
    expect(chainsTo(readFileSync(p.signerCert, 'utf8'), pki.ca.certPem)).toBe(true);
    // and the audit seal, from the same key, the same once
    expect(chainsTo(readFileSync(p.auditSealCert, 'utf8'), pki.ca.certPem)).toBe(true);
    expect(new X509Certificate(readFileSync(p.auditSealCert, 'utf8')).subject).toBe('CN=hospital-api audit seal');
    // and a rerun without TLS flags keeps the hospital's material
    const before = snapshot(d2);
    await install({ dir: d2 }, await gatewayAdmin());
    expect(snapshot(d2)).toEqual(before);
  });

  it("docker: the hospital's own certificate must also name kong (the API container's gateway address); nothing is written", async () => {
    const t = tempDir();
    const pki = makeTestPki(t);
    writeFileSync(join(t, 'ca.key'), pki.ca.keyPem);
    const docker = (dir: string, cert: string, key: string): InstallFlags => ({
      ...base(dir), runtime: 'docker', generateCa: false, ca: pki.files.ca, cert, key, caKey: join(t, 'ca.key'),
    });
    const d1 = join(t, 'a');
    const err = await install(docker(d1, pki.files.cert, pki.files.key), await gatewayAdmin()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HospitalApiError);
    expect((err as HospitalApiError).code).toBe('ERR_INSTALL_TLS_NAME_MISSING');
    expect((err as HospitalApiError).message).toContain(`${pki.files.cert} does not name kong`);
    expect((err as HospitalApiError).hint).toContain('DNS:kong');
    expect(existsSync(d1)).toBe(false);
    // the same certificate is fine for native, and one that names kong is fine for docker
    expect((await install({ ...docker(join(t, 'n'), pki.files.cert, pki.files.key), runtime: 'native' }, await gatewayAdmin())).caGenerated).toBe(false);
    const withKong = issueCertificate(pki.ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1', 'kong'], usage: 'server' });
    writeFileSync(join(t, 'kong.pem'), withKong.certPem);
    writeFileSync(join(t, 'kong.key'), withKong.keyPem);
    const d2 = join(t, 'b');
    await install(docker(d2, join(t, 'kong.pem'), join(t, 'kong.key')), await gatewayAdmin());
    expect(readFileSync(installPaths(d2).gatewayCert, 'utf8')).toBe(withKong.certPem);
  });

  it('a provided --signer-cert must be for signing (emailProtection), or every record would fail record verify', async () => {
    const t = tempDir();
    const pki = makeTestPki(t);
    const flags = (dir: string, cert: string, key: string): InstallFlags => ({
      ...base(dir), generateCa: false, ca: pki.files.ca, cert: pki.files.cert, key: pki.files.key, signerCert: cert, signerKey: key,
    });
    const d1 = join(t, 'a');
    const err = await install(flags(d1, pki.files.cert, pki.files.key), await gatewayAdmin()).catch((e: unknown) => e);
    expect((err as HospitalApiError).code).toBe('ERR_INSTALL_TLS_MISMATCH');
    expect((err as HospitalApiError).message).toMatch(/emailProtection/);
    expect(existsSync(d1)).toBe(false);
    const signer = issueCertificate(pki.ca, { commonName: 'records', usage: 'signing' });
    writeFileSync(join(t, 's.pem'), signer.certPem);
    writeFileSync(join(t, 's.key'), signer.keyPem);
    await install(flags(join(t, 'b'), join(t, 's.pem'), join(t, 's.key')), await gatewayAdmin());
    expect(readFileSync(installPaths(join(t, 'b')).signerCert, 'utf8')).toBe(signer.certPem);
  });

  it('a provided CA without its key: --audit-seal-cert/--audit-seal-key give the seal (the record signer\'s name refused), or the API runs unsealed and install says so', async () => {
    const t = tempDir();
    const pki = makeTestPki(t);
    const signer = issueCertificate(pki.ca, { commonName: 'records', usage: 'signing' });
    // 10 days: within the renewal window, yet kept by a rerun that has no CA key to re-issue it (below)
    const seal = issueAuditSeal(pki.ca, 10);
    for (const [n, v] of [['s.pem', signer.certPem], ['s.key', signer.keyPem], ['seal.pem', seal.certPem], ['seal.key', seal.keyPem]]) writeFileSync(join(t, n as string), v as string);
    const flags = (dir: string, extra: Partial<InstallFlags> = {}): InstallFlags => ({
      ...base(dir), generateCa: false, ca: pki.files.ca, cert: pki.files.cert, key: pki.files.key, signerCert: join(t, 's.pem'), signerKey: join(t, 's.key'), ...extra,
    });
    // the audit-seal certificate cannot be the record signer, and a record signer cannot be the audit seal
    const d1 = join(t, 'a');
    const asSigner = await install(flags(d1, { signerCert: join(t, 'seal.pem'), signerKey: join(t, 'seal.key') }), await gatewayAdmin()).catch((e: unknown) => e);
    expect((asSigner as HospitalApiError).message).toContain('which may not sign acceptance records');
    const asSeal = await install(flags(d1, { auditSealCert: join(t, 's.pem'), auditSealKey: join(t, 's.key') }), await gatewayAdmin()).catch((e: unknown) => e);
    expect((asSeal as HospitalApiError).message).toContain('is not the audit-seal certificate');
    expect(existsSync(d1)).toBe(false);
    // without a seal: no seal settings, and install says so
    const logged: string[] = [];
    const d2 = join(t, 'b');
    const kong = await gatewayAdmin();
    await runInstall(flags(d2), { log: (l) => logged.push(l), openRuntime: () => fakeRuntime(kong), prepare: async () => {} });
    const p2 = installPaths(d2);
    expect(existsSync(p2.auditSealCert)).toBe(false);
    const env2 = parseEnv(readFileSync(p2.apiEnv, 'utf8'));
    expect(env2.AUDIT_SEAL_CERT_FILE).toBeUndefined();
    expect(env2.AUDIT_SEAL_KEY_FILE).toBeUndefined();
    expect(logged.join('\n')).toContain('note: no audit-seal key configured');
    // with one: installed 0600 and named to the API, the record signer's key never
    const d3 = join(t, 'c');
    await install(flags(d3, { auditSealCert: join(t, 'seal.pem'), auditSealKey: join(t, 'seal.key') }), await gatewayAdmin());
    const p3 = installPaths(d3);
    expect(readFileSync(p3.auditSealCert, 'utf8')).toBe(seal.certPem);
    expect(statSync(p3.auditSealKey).mode & 0o777).toBe(0o600);
    const env3 = parseEnv(readFileSync(p3.apiEnv, 'utf8'));
    expect([env3.AUDIT_SEAL_CERT_FILE, env3.AUDIT_SEAL_KEY_FILE]).toEqual([p3.auditSealCert, p3.auditSealKey]);
    await install({ dir: d3 }, await gatewayAdmin());
    expect(readFileSync(p3.auditSealCert, 'utf8')).toBe(seal.certPem);
    expect(parseEnv(readFileSync(p3.apiEnv, 'utf8')).AUDIT_SEAL_KEY_FILE).toBe(p3.auditSealKey);
  });

  it('an install from before the audit seal (its API named the record signer): `up` issues the seal from ca.key and points the API at it', async () => {
    const dir = join(tempDir(), 'inst');
    await install(base(dir), await gatewayAdmin());
    const p = installPaths(dir);
    rmSync(p.auditSealCert);
    rmSync(p.auditSealKey);
    updateEnvValues(p.apiEnv, { AUDIT_SEAL_CERT_FILE: p.signerCert, AUDIT_SEAL_KEY_FILE: p.signerKey, FHIR_API_KEY: 'kept' });
    const upgrade = upgradeAuditSeal(p, readInstallConfig(dir));
    expect(upgrade.sealed).toBe(true);
    expect(upgrade.changes.map((c) => c.path).sort()).toEqual([p.auditSealKey, p.auditSealCert, p.apiEnv].sort());
    const env = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    expect([env.AUDIT_SEAL_CERT_FILE, env.AUDIT_SEAL_KEY_FILE, env.FHIR_API_KEY]).toEqual([p.auditSealCert, p.auditSealKey, 'kept']);
    expect(statSync(p.auditSealKey).mode & 0o777).toBe(0o600);
    expect(chainsTo(readFileSync(p.auditSealCert, 'utf8'), readFileSync(p.caCert, 'utf8'))).toBe(true);
    // a second `up` changes nothing
    expect(upgradeAuditSeal(p, readInstallConfig(dir)).changes).toEqual([]);
    // without the CA key and without a seal: the API is no longer pointed at the record signer, it runs unsealed
    rmSync(p.caKey);
    rmSync(p.auditSealCert);
    updateEnvValues(p.apiEnv, { AUDIT_SEAL_CERT_FILE: p.signerCert, AUDIT_SEAL_KEY_FILE: p.signerKey });
    expect(upgradeAuditSeal(p, readInstallConfig(dir)).sealed).toBe(false);
    const unsealed = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    expect(unsealed.AUDIT_SEAL_CERT_FILE).toBeUndefined();
    expect(unsealed.AUDIT_SEAL_KEY_FILE).toBeUndefined();
  });

  it('reissues the gateway certificate from the same CA when a host is added', async () => {
    const dir = join(tempDir(), 'inst');
    await install(base(dir), await gatewayAdmin());
    const p = installPaths(dir);
    const ca = readFileSync(p.caCert, 'utf8');
    const gw = readFileSync(p.gatewayCert, 'utf8');
    const restarts: string[] = [];
    const kong = await gatewayAdmin();
    await runInstall({ ...base(dir), host: ['127.0.0.1', 'fhir.hospital.example'] }, { log: () => {}, openRuntime: () => fakeRuntime(kong, restarts) });
    expect(restarts).toEqual(['gateway']); // the running gateway loads its new certificate
    expect(readFileSync(p.caCert, 'utf8')).toBe(ca);
    expect(readFileSync(p.gatewayCert, 'utf8')).not.toBe(gw);
    expect(coversHost(readFileSync(p.gatewayCert, 'utf8'), 'fhir.hospital.example')).toBe(true);
    expect(chainsTo(readFileSync(p.gatewayCert, 'utf8'), ca)).toBe(true);
  });
});
