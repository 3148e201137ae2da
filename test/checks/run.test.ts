/**
 * verify against stand-ins on real sockets (HTTPS with a real certificate):
 * every check passes with the right key and CA; another CA fails check 4
 * without a usage error; the record is signed, `record verify` and plain
 * openssl accept it and reject it after one byte changes; no secret in it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInstall } from '../../src/install/run.js';
import { createConsumer } from '../../src/install/consumer.js';
import { runVerify } from '../../src/checks/run.js';
import { verifyRecordFile } from '../../src/checks/record/verify-file.js';
import { CHECKS } from '../../src/checks/list.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { generateCa } from '../../src/tls/pki.js';
import { HospitalApiError } from '../../src/errors/index.js';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { closeGatewayAdmins, gatewayAdmin, type GatewayAdmin } from '../helpers/gateway-admin.js';
import { fakeRuntime, startStandIns, testPorts } from '../install/stand-ins.js';

let kong: GatewayAdmin;
let runtime: ReturnType<typeof fakeRuntime>;
let dir = '';
let key = '';
let stack: { close(): Promise<void> };

beforeAll(async () => {
  kong = await gatewayAdmin();
  runtime = fakeRuntime(kong);
  dir = join(tempDir(), 'inst');
  const ports = await testPorts();
  const flags = Object.fromEntries(Object.entries(ports).map(([k, v]) => [`${k}Port`, String(v)]));
  await runInstall(
    { runtime: 'native', dir, host: ['127.0.0.1'], generateCa: true, ...flags },
    { log: () => {}, openRuntime: () => runtime },
  );
  const p = installPaths(dir);
  stack = await startStandIns(kong, ports, { certPem: readFileSync(p.gatewayCert, 'utf8'), keyPem: readFileSync(p.gatewayKey, 'utf8') });
});

afterAll(async () => {
  await stack?.close();
  await closeGatewayAdmins();
  removeTempDirs();
});

const openssl = (record: string, ca: string) =>
  execa('openssl', ['cms', '-verify', '-binary', '-content', record, '-inform', 'PEM', '-in', `${record}.p7s`, '-CAfile', ca, '-out', '/dev/null'], { reject: false });

describe('verify (stand-in stack)', () => {
  it('fails check 4 while no consumer key exists, and says how to fix it', async () => {
    const r = await runVerify({ dir, runtime });
    const check = r.record.checks.find((c) => c.id === 'key-auth-metadata')!;
    expect(check.status).toBe('fail');
    expect(check.hint).toMatch(/consumer create/);
    expect(r.ok).toBe(false);
    expect(r.record.result).toBe('rejected');
  });

  it('consumer create makes the consumer and key, writes FHIR_API_KEY (0600) and restarts the api', async () => {
    const restarts: string[] = [];
    const result = await createConsumer(fakeRuntime(kong, restarts), dir, { username: 'hospital-a', writeEnv: true }, () => {});
    key = result.key;
    expect(key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY).toBe(key);
    expect(restarts).toEqual(['api']);
    expect(kong.state().consumers).toHaveLength(1);
    await expect(createConsumer(runtime, dir, { username: 'hospital-a' }, () => {})).rejects.toMatchObject({
      code: 'ERR_INSTALL_CONSUMER_EXISTS',
      hint: expect.stringContaining(`\`hospital-api consumer rotate-key hospital-a --dir ${installPaths(dir).root}\``),
    });
    // a --key already used by another consumer: refused without echoing the key
    const taken = createConsumer(runtime, dir, { username: 'hospital-b', key }, () => {});
    await expect(taken).rejects.toMatchObject({ code: 'ERR_INSTALL_KEY_TAKEN' });
    const err = (await taken.catch((e: unknown) => e)) as HospitalApiError;
    expect(`${err.message} ${err.hint}`).not.toContain(key);
    expect(kong.state().keyauth_credentials).toHaveLength(1);
    // all or nothing: hospital-b, created by that failed run, is gone again
    expect(kong.state().consumers.map((c) => c.username)).toEqual(['hospital-a']);
    // a consumer that existed before (without a key) is reused, and kept when the key fails
    expect((await kong.admin('PUT', '/consumers/kept', {})).status).toBe(200);
    await expect(createConsumer(runtime, dir, { username: 'kept', key }, () => {})).rejects.toMatchObject({ code: 'ERR_INSTALL_KEY_TAKEN' });
    expect(kong.state().consumers.map((c) => c.username)).toEqual(['hospital-a', 'kept']);
    expect((await kong.admin('DELETE', '/consumers/kept')).status).toBe(204);
  });

  it('passes every check in issue 5 order and writes a signed record without the key', async () => {
    const r = await runVerify({ dir, runtime });
    expect(r.record.checks.map((c) => c.id)).toEqual(CHECKS.map((c) => c.id));
    for (const c of r.record.checks) expect(c.status, `${c.id}: ${c.summary} ${c.detail}`).toMatch(/^(pass|skip)$/);
    expect(r.ok).toBe(true);
    expect(r.record.result).toBe('accepted');
    const byId = Object.fromEntries(r.record.checks.map((c) => [c.id, c]));
    expect(byId['key-auth-metadata']!.httpStatus).toBe(200);
    expect(byId['key-auth-no-key']!.httpStatus).toBe(401);
    expect(byId['key-auth-wrong-key']!.httpStatus).toBe(401);
    expect(byId['basic-auth-required']!.httpStatus).toBe(401);
    for (const c of r.record.checks) expect(c.durationMs).toBeGreaterThanOrEqual(0);
    const cert = r.record.gateway.certificate!;
    expect(cert.subject).toContain('127.0.0.1');
    expect(cert.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(Date.parse(r.record.testedAt)).toBeGreaterThan(0);
    expect(r.record.testedAt).toMatch(/Z$/);
    expect(r.record.toolkitVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(r.record.versions).toEqual([{ name: 'gateway', version: 'stand-in' }]);
    for (const f of [r.files.json, r.files.markdown, r.files.signature]) expect(readFileSync(f, 'utf8')).not.toContain(key);
    expect(readFileSync(r.files.markdown, 'utf8')).toContain('ACCEPTED');

    const ca = installPaths(dir).caCert;
    expect(verifyRecordFile(r.files.json, {}).signer.subject).toContain('record signer');
    expect((await openssl(r.files.json, ca)).exitCode).toBe(0);
    expect((await runCli(['record', 'verify', r.files.json])).exitCode).toBe(0);

    // one byte changed → both refuse
    const bytes = readFileSync(r.files.json);
    const i = bytes.indexOf('"accepted"') + 1;
    bytes[i] = 'A'.charCodeAt(0);
    writeFileSync(r.files.json, bytes);
    expect((await openssl(r.files.json, ca)).exitCode).not.toBe(0);
    const cli = await runCli(['record', 'verify', r.files.json, '--json']);
    expect(cli.exitCode).toBe(1);
    expect(JSON.parse(String(cli.stdout)).error.code).toBe('ERR_INSTALL_RECORD_INVALID');
  });

  it('with another CA: check 4 fails as a check (not a usage error), the record is rejected', async () => {
    const other = join(tempDir(), 'other-ca.pem');
    writeFileSync(other, generateCa({ commonName: 'Unrelated CA' }).certPem);
    const r = await runVerify({ dir, runtime, ca: other });
    const check = r.record.checks.find((c) => c.id === 'key-auth-metadata')!;
    expect(check.spec).toBe('4.5.4');
    expect(check.status).toBe('fail');
    expect(check.detail).toMatch(/CERT|certificate|self.signed|issuer/i);
    expect(r.record.checks.find((c) => c.id === 'certificate-chain')!.status).toBe('fail');
    expect(r.record.gateway.certificate).toBeNull();
    expect(r.ok).toBe(false);
    // the record itself still verifies against the install's CA, not the other one
    expect(() => verifyRecordFile(r.files.json, { ca: other })).toThrow(/not issued by the given CA/);
    expect((await openssl(r.files.json, other)).exitCode).not.toBe(0);
  });

  it('NODE_TLS_REJECT_UNAUTHORIZED=0 does not switch verification off: another CA still fails checks 4 and chain', async () => {
    const other = join(tempDir(), 'other-ca.pem');
    writeFileSync(other, generateCa({ commonName: 'Unrelated CA' }).certPem);
    const saved = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const r = await runVerify({ dir, runtime, ca: other });
      expect(r.record.checks.find((c) => c.id === 'key-auth-metadata')!.status).toBe('fail');
      expect(r.record.checks.find((c) => c.id === 'certificate-chain')!.status).toBe('fail');
      expect([r.ok, r.record.result]).toEqual([false, 'rejected']);
    } finally {
      if (saved === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = saved;
    }
  });

  it('a wrong key fails check 4 with the 401 it got', async () => {
    const env = installPaths(dir).apiEnv;
    const saved = readFileSync(env);
    writeFileSync(env, `FHIR_API_KEY="not-the-right-key-000000"\n`, { mode: 0o600 });
    try {
      const r = await runVerify({ dir, runtime });
      const check = r.record.checks.find((c) => c.id === 'key-auth-metadata')!;
      expect([check.status, check.httpStatus]).toEqual(['fail', 401]);
      expect(readFileSync(r.files.json, 'utf8')).not.toContain('not-the-right-key-000000');
    } finally {
      writeFileSync(env, saved);
    }
  });
});
