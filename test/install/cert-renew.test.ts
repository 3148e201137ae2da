/**
 * Issue 15: `cert renew` on the real native stack. The gateway takes the
 * re-issued certificate without dropping a connection (a keep-alive
 * connection opened before the renewal keeps serving on the same socket) and
 * without a failed platform request under load; new handshakes present the
 * new certificate; `status` and `cert status` show the days left; `verify`
 * warns under 30 days and passes; bad input changes nothing.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { presentedFingerprint, renewCertificates } from '../../src/install/cert-renew.js';
import { issueAuditSeal } from '../../src/install/tls.js';
import { openRuntime } from '../../src/runtime/index.js';
import type { Runtime } from '../../src/runtime/types.js';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { parsePemBundle } from '../../src/tls/inspect.js';
import { loadLoop, startNativeSite, type NativeSite } from '../helpers/native-site.js';

let site: NativeSite;
let paths: ReturnType<typeof installPaths>;

beforeAll(async () => {
  site = await startNativeSite({ seed: 'day2-cert', patients: 2, sizes: '20-60' });
  paths = installPaths(site.dir);
});

afterAll(async () => {
  await site?.close();
  removeTempDirs();
});

const presented = () => presentedFingerprint(readFileSync(paths.caCert, 'utf8'), site.ports.gatewayHttps, 'localhost');
const fileFingerprint = (path: string) => new X509Certificate(readFileSync(path)).fingerprint256;
const tlsDigest = () => readdirSync(paths.tls).sort().map((f) => `${f}:${createHash('sha256').update(readFileSync(join(paths.tls, f))).digest('hex')}`).join('\n');
const certDays = async (cmd: string[]) => {
  const r = await site.cli([...cmd, '--json']);
  return { code: r.code, days: Object.fromEntries((JSON.parse(r.out).result.certificates as Array<{ name: string; daysLeft: number }>).map((c) => [c.name, c.daysLeft])) };
};

/** The Hospital API's metrics listener: hospital_api_certificate_remaining_seconds by certificate, in whole days as status shows them. */
const metricDays = async (): Promise<Record<string, number>> => {
  // with the token install made (issue 45: /metrics for its holder only)
  const token = readFileSync(readEnvFile(installPaths(site.dir).apiEnv).METRICS_TOKEN_FILE!, 'utf8').trim();
  const res = await request(`http://127.0.0.1:${site.ports.metrics}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.statusCode).toBe(200);
  const text = await res.body.text();
  return Object.fromEntries(
    [...text.matchAll(/^hospital_api_certificate_remaining_seconds\{certificate="([^"]+)"\} (-?\d+)$/gm)].map((m) => [m[1]!, Math.floor(Number(m[2]) / 86_400)]),
  );
};

describe('cert renew (issue 15)', () => {
  it('re-issues both certificates; the gateway takes the new one with no dropped connection or failed request', async () => {
    const before = await certDays(['status']);
    // install issued it for 365 days, the longest a server certificate lives
    expect(before.days.gateway).toBe(364);
    // The API's metrics show the same days as status, for the install's certificates and the CA the API trusts.
    const metricsBefore = await metricDays();
    expect(metricsBefore).toEqual({ ...before.days, 'fhir-ca-trusted': before.days.ca });
    const oldGateway = await presented();
    expect(oldGateway).toBe(fileFingerprint(paths.gatewayCert));
    const oldSigner = fileFingerprint(paths.signerCert);
    const oldSeal = fileFingerprint(paths.auditSealCert);

    // A keep-alive connection opened before the renewal.
    let connections = 0;
    const client = new Client(`https://127.0.0.1:${site.ports.gatewayHttps}`, {
      connect: { ca: readFileSync(paths.caCert, 'utf8'), servername: 'localhost', rejectUnauthorized: true },
      keepAliveTimeout: 60_000, keepAliveMaxTimeout: 60_000,
    });
    client.on('connect', () => connections++);
    const key = readEnvFile(paths.apiEnv).FHIR_API_KEY!;
    const get = async () => {
      const res = await client.request({ method: 'GET', path: '/fhir-api-key-auth/metadata', headers: { apikey: key, host: 'localhost' } });
      await res.body.text();
      return res.statusCode;
    };
    try {
      expect(await get()).toBe(200);
      const load = loadLoop(site, 2);
      await new Promise((r) => setTimeout(r, 1000));
      const t0 = Date.now();
      const renew = await site.cli(['cert', 'renew', '--days', '10']);
      console.log(`cert renew: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      await new Promise((r) => setTimeout(r, 1000));
      const results = await load.stop();
      expect(renew.code, renew.err).toBe(0);
      const failed = results.filter((r) => r.status !== 200 || r.error);
      expect(failed, JSON.stringify(failed.slice(0, 3))).toEqual([]);
      expect(results.length).toBeGreaterThan(5);

      expect(await get()).toBe(200);
      expect(connections, 'the connection opened before the renewal was kept').toBe(1);
    } finally {
      await client.close();
    }
    const now = await presented();
    expect(now).not.toBe(oldGateway);
    expect(now).toBe(fileFingerprint(paths.gatewayCert));
    expect(fileFingerprint(paths.signerCert)).not.toBe(oldSigner);
    // the audit seal is renewed with the signer (issue 46), still apart from it
    expect(fileFingerprint(paths.auditSealCert)).not.toBe(oldSeal);
    expect(new X509Certificate(readFileSync(paths.auditSealCert)).subject).toBe('CN=hospital-api audit seal');
    expect(readFileSync(paths.gatewayKey).length).toBeGreaterThan(0);

    // Days left: status and cert status show them; under 30 is a warning.
    const status = await certDays(['status']);
    expect(status.days.gateway).toBeGreaterThanOrEqual(9);
    expect(status.days.gateway).toBeLessThanOrEqual(10);
    expect(status.days['record-signer']).toBeLessThanOrEqual(10);
    expect(status.days['audit-seal']).toBeLessThanOrEqual(10);
    // The metrics follow the renewal at the next scrape, without an API restart.
    expect(await metricDays()).toEqual({ ...status.days, 'fhir-ca-trusted': status.days.ca });
    expect((await certDays(['cert', 'status'])).code).toBe(1);
    const verify = await site.cli(['verify', '--json']);
    expect(verify.code, verify.err).toBe(0);
    const checks = JSON.parse(verify.out).result.record.checks as Array<{ id: string; status: string }>;
    expect(checks.find((c) => c.id === 'certificate-expiry')!.status).toBe('warn');
  });

  it('renews again for the default term; verify passes without the warning and its record verifies with the new signer', async () => {
    const renew = await site.cli(['cert', 'renew']);
    expect(renew.code, renew.err).toBe(0);
    expect((await certDays(['cert', 'status'])).code).toBe(0);
    const verify = await site.cli(['verify', '--json']);
    expect(verify.code, verify.err).toBe(0);
    const result = JSON.parse(verify.out).result;
    expect((result.record.checks as Array<{ id: string; status: string }>).find((c) => c.id === 'certificate-expiry')!.status).toBe('pass');
    const record = await site.cli(['record', 'verify', result.recordPath]);
    expect(record.code, record.out + record.err).toBe(0);
  });

  it('installs the hospital\'s own new certificate given with --cert/--key', async () => {
    const ca = { certPem: readFileSync(paths.caCert, 'utf8'), keyPem: readFileSync(paths.caKey, 'utf8') };
    const mine = issueCertificate(ca, { commonName: 'localhost', hosts: ['localhost', '127.0.0.1'], usage: 'server', days: 200 });
    const dir = tempDir('hapi-cert-');
    writeFileSync(join(dir, 'gw.pem'), mine.certPem);
    writeFileSync(join(dir, 'gw.key'), mine.keyPem, { mode: 0o600 });
    // and its own audit seal (issue 46), checked for its name like install checks it
    const seal = issueAuditSeal(ca, 200);
    writeFileSync(join(dir, 'seal.pem'), seal.certPem);
    writeFileSync(join(dir, 'seal.key'), seal.keyPem, { mode: 0o600 });
    const r = await site.cli(['cert', 'renew', '--cert', join(dir, 'gw.pem'), '--key', join(dir, 'gw.key'), '--audit-seal-cert', join(dir, 'seal.pem'), '--audit-seal-key', join(dir, 'seal.key')]);
    expect(r.code, r.err).toBe(0);
    expect(readFileSync(paths.auditSealCert, 'utf8')).toBe(seal.certPem);
    expect(statSync(paths.auditSealKey).mode & 0o777).toBe(0o600);
    expect(await presented()).toBe(new X509Certificate(mine.certPem).fingerprint256);
    expect((await certDays(['status'])).days.gateway).toBe(199);
  });

  it('refuses a certificate from another CA, or one missing a name, and changes nothing', async () => {
    const before = tlsDigest();
    const gatewayBefore = await presented();
    const dir = tempDir('hapi-cert-bad-');
    const other = generateCa({ commonName: 'Unrelated CA' });
    const foreign = issueCertificate(other, { commonName: 'localhost', hosts: ['localhost', '127.0.0.1'], usage: 'server' });
    writeFileSync(join(dir, 'f.pem'), foreign.certPem);
    writeFileSync(join(dir, 'f.key'), foreign.keyPem);
    const a = await site.cli(['cert', 'renew', '--cert', join(dir, 'f.pem'), '--key', join(dir, 'f.key'), '--json']);
    expect(a.code).not.toBe(0);
    expect(JSON.parse(a.out).error.code).toBe('ERR_INSTALL_TLS_MISMATCH');

    const ca = { certPem: readFileSync(paths.caCert, 'utf8'), keyPem: readFileSync(paths.caKey, 'utf8') };
    const narrow = issueCertificate(ca, { commonName: 'localhost', hosts: ['localhost'], usage: 'server' });
    writeFileSync(join(dir, 'n.pem'), narrow.certPem);
    writeFileSync(join(dir, 'n.key'), narrow.keyPem);
    const b = await site.cli(['cert', 'renew', '--cert', join(dir, 'n.pem'), '--key', join(dir, 'n.key'), '--json']);
    expect(b.code).not.toBe(0);
    expect(JSON.parse(b.out).error.message).toContain('127.0.0.1');

    // a record signer is not an audit seal
    const signerLike = issueCertificate(ca, { commonName: 'records', usage: 'signing' });
    writeFileSync(join(dir, 's.pem'), signerLike.certPem);
    writeFileSync(join(dir, 's.key'), signerLike.keyPem);
    const good = issueCertificate(ca, { commonName: 'localhost', hosts: ['localhost', '127.0.0.1'], usage: 'server' });
    writeFileSync(join(dir, 'g.pem'), good.certPem);
    writeFileSync(join(dir, 'g.key'), good.keyPem);
    const s = await site.cli(['cert', 'renew', '--cert', join(dir, 'g.pem'), '--key', join(dir, 'g.key'), '--audit-seal-cert', join(dir, 's.pem'), '--audit-seal-key', join(dir, 's.key'), '--json']);
    expect(s.code).not.toBe(0);
    expect(JSON.parse(s.out).error.message).toContain('is not the audit-seal certificate');

    const c = await site.cli(['cert', 'renew', '--days', '0', '--json']);
    expect(c.code).toBe(2);
    // a server certificate lives at most 365 days (SERVER_CERT_MAX_DAYS)
    const d = await site.cli(['cert', 'renew', '--days', '366', '--json']);
    expect(d.code).toBe(2);
    expect(JSON.parse(d.out).error.message).toContain('from 1 to 365');
    expect(tlsDigest()).toBe(before);
    expect(await presented()).toBe(gatewayBefore);
  });
});

describe('a new CA (issue 15: the CA nears expiry, or the hospital changes PKI)', () => {
  const caBundle = () => parsePemBundle(readFileSync(paths.caCert, 'utf8'));
  const apiPid = async () => {
    const r = await site.cli(['status', '--json']);
    return (JSON.parse(r.out).result.components as Array<{ name: string; pid?: number }>).find((c) => c.name === 'api')!.pid;
  };
  /** The gateway's certificate as a client trusting only `caPem` sees it (throws if it does not verify). */
  const presentedTo = (caPem: string) => presentedFingerprint(caPem, site.ports.gatewayHttps, 'localhost');

  it('--renew-ca under load: the API trusts the new CA without a restart, no request fails, verify passes, an earlier record still verifies', async () => {
    const before = await site.cli(['verify', '--json']);
    expect(before.code, before.err).toBe(0);
    const oldRecord = JSON.parse(before.out).result.recordPath as string;
    const oldCa = caBundle()[0]!;
    const pid = await apiPid();

    const load = loadLoop(site, 2);
    await new Promise((r) => setTimeout(r, 1000));
    const renew = await site.cli(['cert', 'renew', '--renew-ca', '--ca-days', '2000', '--json']);
    await new Promise((r) => setTimeout(r, 1000));
    const results = await load.stop();
    expect(renew.code, renew.err + renew.out).toBe(0);
    const failed = results.filter((r) => r.status !== 200 || r.error);
    expect(failed, JSON.stringify(failed.slice(0, 3))).toEqual([]);
    expect(results.length).toBeGreaterThan(5);

    const bundle = caBundle();
    const newCa = bundle[0]!;
    expect(newCa.fingerprint256).not.toBe(oldCa.fingerprint256);
    expect(bundle.map((c) => c.fingerprint256)).toContain(oldCa.fingerprint256);
    expect(JSON.parse(renew.out).result.ca.fingerprint256).toBe(newCa.fingerprint256);
    // The generated CA's new key replaced the old one (0600); the leaves are issued by the new CA.
    expect(newCa.checkPrivateKey(createPrivateKey(readFileSync(paths.caKey)))).toBe(true);
    expect(statSync(paths.caKey).mode & 0o777).toBe(0o600);
    for (const leaf of [paths.gatewayCert, paths.signerCert]) expect(new X509Certificate(readFileSync(leaf)).checkIssued(newCa), leaf).toBe(true);
    // A client that trusts only the new CA verifies the gateway; the API took it without a restart.
    expect(await presentedTo(newCa.toString())).toBe(fileFingerprint(paths.gatewayCert));
    expect(await apiPid()).toBe(pid);
    // The API's own word (its reload status and its metrics) that it trusts the new CA: a request through
    // it would not show it yet, since its TLS sessions to the gateway resume without a new certificate check.
    const reload = JSON.parse(readFileSync(join(paths.run, 'api-reload.json'), 'utf8')) as { pid: number; caFingerprint: string };
    expect(reload).toMatchObject({ pid, caFingerprint: newCa.fingerprint256 });
    const days = await metricDays();
    expect(days.ca).toBe(1999);
    expect(days['fhir-ca-trusted'], 'the API trusts the new CA').toBe(1999);

    const after = await site.cli(['verify', '--json']);
    expect(after.code, after.out).toBe(0);
    const record = await site.cli(['record', 'verify', oldRecord]);
    expect(record.code, 'a record signed before the CA change still verifies: ' + record.out + record.err).toBe(0);
    const fresh = await site.cli(['record', 'verify', JSON.parse(after.out).result.recordPath]);
    expect(fresh.code, fresh.out + fresh.err).toBe(0);
  });

  it('keeps the CA key in use on disk until the API has confirmed the new CA and the certificates are issued (a crash in between loses no key)', async () => {
    const keyBefore = readFileSync(paths.caKey, 'utf8');
    const native = await openRuntime(site.dir);
    const seen: string[] = [];
    // the real native runtime; its reload is observed at the moment the API answers, before any key could change
    const observed: Runtime = { ...native, reloadApiKey: async () => {
      const r = await native.reloadApiKey!();
      seen.push(readFileSync(paths.caKey, 'utf8'));
      return r;
    } };
    const result = await renewCertificates(observed, site.dir, {}, () => {}, { generate: true, only: false, days: 2000 });
    expect(seen.length).toBe(1);
    expect(seen[0] === keyBefore, 'the previous CA key was still on disk while the API confirmed the new CA').toBe(true);
    // and only then replaced by the new CA's key
    const newKey = readFileSync(paths.caKey, 'utf8');
    expect(newKey).not.toBe(keyBefore);
    expect(new X509Certificate(readFileSync(paths.caCert)).checkPrivateKey(createPrivateKey(newKey))).toBe(true);
    expect(caBundle()[0]!.fingerprint256).toBe(result.ca!.fingerprint256);
  });

  it("--ca-cert/--ca-key installs the hospital's new CA: its key is not stored, install.json says the CA is the hospital's, verify passes", async () => {
    const dir = tempDir('hapi-newca-');
    const hospital = generateCa({ commonName: 'St Example Hospital Issuing CA 2027' });
    writeFileSync(join(dir, 'ca.pem'), hospital.certPem);
    writeFileSync(join(dir, 'ca.key'), hospital.keyPem, { mode: 0o600 });
    const r = await site.cli(['cert', 'renew', '--ca-cert', join(dir, 'ca.pem'), '--ca-key', join(dir, 'ca.key'), '--days', '300']);
    expect(r.code, r.err).toBe(0);
    expect(caBundle()[0]!.fingerprint256).toBe(new X509Certificate(hospital.certPem).fingerprint256);
    expect(existsSync(paths.caKey)).toBe(false);
    expect(JSON.parse(readFileSync(join(site.dir, 'install.json'), 'utf8')).caGenerated).toBe(false);
    expect(await presentedTo(hospital.certPem)).toBe(fileFingerprint(paths.gatewayCert));
    expect((await certDays(['status'])).days.gateway).toBe(299);
    const verify = await site.cli(['verify', '--json']);
    expect(verify.code, verify.out).toBe(0);
    // Later renewals issue from it with its key given once more.
    const again = await site.cli(['cert', 'renew', '--ca-key', join(dir, 'ca.key')]);
    expect(again.code, again.err).toBe(0);
    // without --days: 365 days for the gateway (the longest a server certificate lives), 825 for the record signer
    const left = (await certDays(['status'])).days;
    expect([left.gateway, left['record-signer']]).toEqual([364, 824]);
    expect(new X509Certificate(readFileSync(paths.gatewayCert)).checkIssued(new X509Certificate(hospital.certPem))).toBe(true);
  });

  it('refuses a CA that is not one, a key that does not fit, and --renew-ca without the CA key, changing nothing', async () => {
    const before = tlsDigest();
    const gatewayBefore = await presented();
    const dir = tempDir('hapi-newca-bad-');
    const other = generateCa({ commonName: 'Another CA' });
    const leaf = issueCertificate(other, { commonName: 'localhost', hosts: ['localhost'], usage: 'server' });
    writeFileSync(join(dir, 'leaf.pem'), leaf.certPem);
    writeFileSync(join(dir, 'leaf.key'), leaf.keyPem);
    writeFileSync(join(dir, 'other.pem'), other.certPem);
    writeFileSync(join(dir, 'other.key'), other.keyPem);
    const notCa = await site.cli(['cert', 'renew', '--ca-cert', join(dir, 'leaf.pem'), '--ca-key', join(dir, 'leaf.key'), '--json']);
    expect(notCa.code).not.toBe(0);
    expect(JSON.parse(notCa.out).error.message).toMatch(/not a CA certificate/);
    const wrongKey = await site.cli(['cert', 'renew', '--ca-cert', join(dir, 'other.pem'), '--ca-key', join(dir, 'leaf.key'), '--json']);
    expect(JSON.parse(wrongKey.out).error.code).toBe('ERR_INSTALL_TLS_MISMATCH');
    // The hospital's CA is installed (previous test): the install holds no CA key to generate a successor with.
    const noKey = await site.cli(['cert', 'renew', '--renew-ca', '--json']);
    expect(JSON.parse(noKey.out).error.code).toBe('ERR_CERT_RENEW');
    const mixed = await site.cli(['cert', 'renew', '--ca-cert', join(dir, 'other.pem'), '--ca-key', join(dir, 'other.key'), '--cert', join(dir, 'leaf.pem'), '--key', join(dir, 'leaf.key'), '--json']);
    expect(mixed.code).toBe(2);
    expect(tlsDigest()).toBe(before);
    expect(await presented()).toBe(gatewayBefore);
  });

  it('--ca-only installs the new CA and the API\'s trust but keeps the certificates; a later cert renew issues from it', async () => {
    const dir = tempDir('hapi-newca-only-');
    const next = generateCa({ commonName: 'St Example Hospital Issuing CA 2028' });
    writeFileSync(join(dir, 'ca.pem'), next.certPem);
    writeFileSync(join(dir, 'ca.key'), next.keyPem, { mode: 0o600 });
    const gatewayBefore = fileFingerprint(paths.gatewayCert);
    const previousCa = caBundle()[0]!;
    const r = await site.cli(['cert', 'renew', '--ca-cert', join(dir, 'ca.pem'), '--ca-key', join(dir, 'ca.key'), '--ca-only', '--json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out).result.how).toBe('ca-only');
    expect(caBundle()[0]!.fingerprint256).toBe(new X509Certificate(next.certPem).fingerprint256);
    expect(fileFingerprint(paths.gatewayCert)).toBe(gatewayBefore);
    expect(await presented()).toBe(gatewayBefore); // still issued by the previous CA, which the bundle keeps
    const reload = JSON.parse(readFileSync(join(paths.run, 'api-reload.json'), 'utf8')) as { caFingerprint: string };
    expect(reload.caFingerprint).toBe(new X509Certificate(next.certPem).fingerprint256);
    expect((await site.cli(['verify'])).code).toBe(0);
    const renew = await site.cli(['cert', 'renew', '--ca-key', join(dir, 'ca.key')]);
    expect(renew.code, renew.err).toBe(0);
    expect(new X509Certificate(readFileSync(paths.gatewayCert)).checkIssued(new X509Certificate(next.certPem))).toBe(true);
    expect(new X509Certificate(readFileSync(paths.gatewayCert)).checkIssued(previousCa)).toBe(false);
    expect((await site.cli(['verify'])).code).toBe(0);
  });
});
