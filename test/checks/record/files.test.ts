/**
 * The acceptance record as files: what buildRecord puts in (and counts), the
 * redaction of secrets, the Markdown copy, where writeSignedRecord writes and
 * that it refuses without a signer, and which CA `record verify` picks. Each test
 * stands alone (mutation testing runs them one by one).
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildRecord, RECORD_FORMAT, serializeRecord, type RecordInput } from '../../../src/checks/record/build.js';
import { verifyRecordFile } from '../../../src/checks/record/verify-file.js';
import { renderRecordMarkdown } from '../../../src/checks/record/markdown.js';
import { writeSignedRecord } from '../../../src/checks/record/write.js';
import type { InstallConfig } from '../../../src/install-dir/install-config.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import type { CheckResult } from '../../../src/checks/types.js';
import { describeCertificate } from '../../../src/tls/inspect.js';
import { generateCa, issueCertificate } from '../../../src/tls/pki.js';
import { VERSION } from '../../../src/version.js';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const ca = generateCa({ commonName: 'Files Test CA' });
const signer = issueCertificate(ca, { commonName: 'files signer', usage: 'signing' });
const gateway = describeCertificate(new X509Certificate(issueCertificate(ca, { commonName: 'gw.example', hosts: ['gw.example'], usage: 'server' }).certPem));
const caInfo = describeCertificate(new X509Certificate(ca.certPem));

const config: InstallConfig = {
  formatVersion: 1, runtime: 'native', hosts: ['gw.example'],
  ports: { api: 9000, fhir: 8080, gatewayHttp: 8000, gatewayHttps: 8443, gatewayAdmin: 8001, metrics: 9464 },
  platformApiUrl: null, caGenerated: true, cors: { origins: ['*'], headers: null, exposedHeaders: null },
  toolkitVersion: '0.0.0', installedAt: '2026-01-01T00:00:00.000Z', demo: false,
};

const result = (id: string, status: CheckResult['status'], extra: Partial<CheckResult> = {}): CheckResult => ({
  id, spec: '4.5.1', title: `Title ${id}`, mandatory: true, status, summary: `summary ${id}`, detail: '', durationMs: 3, ...extra,
});

function input(over: Partial<RecordInput> = {}): RecordInput {
  return {
    config, installDir: '/srv/hospital-api', testedAt: new Date('2026-03-04T05:06:07.089Z'), accepted: false,
    gatewayCertificate: gateway, ca: { path: '/srv/hospital-api/tls/ca.pem', certificate: caInfo },
    versions: [{ name: 'gateway', version: '1.2.3', image: 'kong:3.9', digest: 'sha256:abc' }],
    checks: [result('a', 'pass'), result('b', 'fail'), result('c', 'fail'), result('d', 'warn'), result('e', 'skip'), result('f', 'error')],
    ...over,
  };
}

/** An install directory with a CA and a record signer, as install leaves it. */
function installDir(withSigner = true): string {
  const dir = join(tempDir(), 'inst');
  const p = installPaths(dir);
  mkdirSync(p.tls, { recursive: true });
  writeFileSync(p.caCert, ca.certPem);
  if (withSigner) {
    writeFileSync(p.signerCert, signer.certPem);
    writeFileSync(p.signerKey, signer.keyPem, { mode: 0o600 });
  }
  return dir;
}

describe('buildRecord', () => {
  it('holds the result, time, host, toolkit, runtime, gateway, CA, versions, checks and a count per status', () => {
    const r = buildRecord(input());
    expect(r).toEqual({
      format: RECORD_FORMAT, result: 'rejected', testedAt: '2026-03-04T05:06:07.089Z', host: hostname(), toolkitVersion: VERSION,
      runtime: 'native', demo: false, installDir: '/srv/hospital-api',
      gateway: { url: 'https://gw.example:8443', certificate: gateway },
      ca: { path: '/srv/hospital-api/tls/ca.pem', certificate: caInfo },
      versions: [{ name: 'gateway', version: '1.2.3', image: 'kong:3.9', digest: 'sha256:abc' }],
      checks: input().checks,
      summary: { pass: 1, warn: 1, fail: 2, skip: 1, error: 1 },
      // issue 23: nothing read from the gateway here
      gatewayConfigSha256: null, gatewayRoutes: [], gatewayUndeclared: [],
      // issue 46: linked when written
      previousRecordSha256: null,
    });
    const gw = { configSha256: 'f'.repeat(64), routes: [], undeclared: [{ kind: 'consumer' as const, name: 'hospital-a', detail: '' }] };
    expect(buildRecord(input({ gateway: gw }))).toMatchObject({ gatewayConfigSha256: gw.configSha256, gatewayRoutes: [], gatewayUndeclared: gw.undeclared });
    expect(RECORD_FORMAT).toBe('hospital-api/acceptance-record@1');
    expect(buildRecord(input({ accepted: true, checks: [] }))).toMatchObject({ result: 'accepted', summary: { pass: 0, warn: 0, fail: 0, skip: 0, error: 0 } });
  });

  it('serializes as indented JSON with a final newline, replacing every secret of 8 characters or more', () => {
    const r = buildRecord(input({ checks: [result('a', 'fail', { summary: 'key s3cr3t-key-value and again s3cr3t-key-value', detail: 'short' })] }));
    const text = serializeRecord(r, ['s3cr3t-key-value', null, undefined, 'short', '']);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text.split('\n')[1]).toBe(`  "format": "${RECORD_FORMAT}",`);
    expect(text).toContain('key [redacted] and again [redacted]');
    expect(text).not.toContain('s3cr3t-key-value');
    expect(text).toContain('"detail": "short"'); // under 8 characters: too short to be a key, not replaced
    expect(serializeRecord(r, ['1234567'])).toBe(serializeRecord(r));
    expect(serializeRecord(r, ['and agai'])).toContain('[redacted]n s3cr3t'); // exactly 8: replaced
    expect(JSON.parse(serializeRecord(r))).toEqual(r);
  });
});

describe('the Markdown copy', () => {
  it('says the result, the demo label, the certificate, the versions and one row per check', () => {
    const r = buildRecord(input({ config: { ...config, demo: true }, checks: [result('a', 'pass', { httpStatus: 200, summary: 'a|b\nc' }), result('b', 'warn')] }));
    const md = renderRecordMarkdown(r, 'acceptance-x.json');
    const lines = md.split('\n');
    expect(lines[0]).toBe('# Acceptance record: REJECTED (DEMO installation)');
    expect(lines).toContain('- Tested at (UTC): 2026-03-04T05:06:07.089Z');
    expect(lines).toContain(`- Host: ${hostname()}`);
    expect(lines).toContain(`- Toolkit: hospital-api ${VERSION}, runtime native`);
    expect(lines).toContain('- Gateway: https://gw.example:8443');
    expect(lines).toContain('- Signed copy: `acceptance-x.json` with detached signature `acceptance-x.json.p7s`');
    expect(lines).toContain(`- Subject: ${gateway.subject}`);
    expect(lines).toContain(`- Issuer: ${gateway.issuer}`);
    expect(lines).toContain(`- Serial: ${gateway.serialNumber}`);
    expect(lines).toContain(`- Valid: ${gateway.validFrom} to ${gateway.validTo}`);
    expect(lines).toContain(`- SHA-256: ${gateway.fingerprint256}`);
    expect(lines).toContain(`- Verified against CA: ${caInfo.subject} (SHA-256 ${caInfo.fingerprint256})`);
    expect(lines).toContain('| gateway | 1.2.3 | kong:3.9 | sha256:abc |');
    expect(lines).toContain('| 4.5.1 | Title a | PASS | 200 | a\\|b c | 3 |');
    expect(lines).toContain('| 4.5.1 | Title b | WARN |  | summary b | 3 |');
    expect(md.endsWith('\n')).toBe(true);
    // the layout: blank line after the title, the three sections with their headings and table heads
    expect(lines.slice(1, 2)).toEqual(['']);
    const at = (text: string) => lines.indexOf(text);
    expect(lines.slice(at('## Gateway certificate') - 1, at('## Gateway certificate') + 2)).toEqual(['', '## Gateway certificate', '']);
    expect(lines.slice(at('## Versions') - 1, at('## Versions') + 4)).toEqual(['', '## Versions', '', '| Component | Version | Image | Digest |', '|---|---|---|---|']);
    expect(lines.slice(at('## Checks') - 1, at('## Checks') + 4)).toEqual(['', '## Checks', '', '| # | Check | Status | HTTP | Result | ms |', '|---|---|---|---|---|---|']);
    expect(at('## Gateway certificate')).toBeLessThan(at('## Versions'));
    expect(at('## Versions')).toBeLessThan(at('## Checks'));
    expect(lines.at(-1)).toBe('');
    expect(lines[at('## Gateway') - 2]).toBe('| 4.5.1 | Title b | WARN |  | summary b | 3 |');
    // issue 23: the gateway's configuration hash, its routes to the FHIR server and the objects install did not make
    expect(at('## Checks')).toBeLessThan(at('## Gateway'));
    expect(lines).toContain('- Configuration SHA-256: not read');
    expect(lines).toContain('| Route to the FHIR server | Service | Guards | Answered without credentials | Open |');
  });

  it('an accepted production record, a certificate that did not verify, a version without image', () => {
    const r = buildRecord(input({ accepted: true, gatewayCertificate: null, versions: [{ name: 'api', version: '0.1.0' }], checks: [result('x', 'skip'), result('y', 'error'), result('z', 'fail')] }));
    const md = renderRecordMarkdown(r, 'r.json');
    expect(md.split('\n')[0]).toBe('# Acceptance record: ACCEPTED');
    expect(md).toContain('- Not captured: the certificate did not verify against the CA.');
    expect(md).not.toContain('- Subject:');
    expect(md).toContain('| api | 0.1.0 |  |  |');
    expect(md).toMatch(/\| SKIP \|[\s\S]*\| ERROR \|[\s\S]*\| FAIL \|/);
  });
});

/** A record signed in an install directory, copied (with its signature) to a folder outside any install. */
function looseRecord(): { dir: string; files: ReturnType<typeof writeSignedRecord>; loose: string } {
  const dir = installDir();
  const files = writeSignedRecord(dir, buildRecord(input()), []);
  const loose = join(tempDir(), 'a', 'b.json');
  mkdirSync(join(loose, '..'), { recursive: true });
  writeFileSync(loose, readFileSync(files.json));
  writeFileSync(`${loose}.p7s`, readFileSync(files.signature));
  return { dir, files, loose };
}

describe('writeSignedRecord and record verify', () => {
  it('writes acceptance-<time>.json, its .p7s and a .md into reports/, signed by the install signer', () => {
    const dir = installDir();
    const r = buildRecord(input());
    const files = writeSignedRecord(dir, r, ['not-in-there-1234']);
    const reports = installPaths(dir).reports;
    expect(files).toEqual({
      json: join(reports, 'acceptance-20260304T050607089Z.json'),
      signature: join(reports, 'acceptance-20260304T050607089Z.json.p7s'),
      markdown: join(reports, 'acceptance-20260304T050607089Z.md'),
      // the first record of the folder: it names no previous one
      record: r,
    });
    expect(readdirSync(reports).sort()).toEqual(['acceptance-20260304T050607089Z.json', 'acceptance-20260304T050607089Z.json.p7s', 'acceptance-20260304T050607089Z.md']);
    expect(readFileSync(files.json, 'utf8')).toBe(serializeRecord(r));
    expect(readFileSync(files.signature, 'utf8')).toMatch(/^-----BEGIN PKCS7-----/);
    expect(readFileSync(files.markdown, 'utf8')).toBe(renderRecordMarkdown(r, 'acceptance-20260304T050607089Z.json'));
    const check = verifyRecordFile(files.json, {});
    expect(check).toMatchObject({ record: files.json, signature: files.signature, ca: installPaths(dir).caCert });
    expect(check.signer.subject).toBe('CN=files signer');
    expect(Date.parse(check.signingTime!)).toBeGreaterThan(Date.now() - 120_000);
  });

  it('redacts the secrets it is given in the signed bytes', () => {
    const dir = installDir();
    const r = buildRecord(input({ checks: [result('a', 'fail', { detail: 'apikey=abcdefgh12345678' })] }));
    const files = writeSignedRecord(dir, r, ['abcdefgh12345678']);
    expect(readFileSync(files.json, 'utf8')).toContain('apikey=[redacted]');
    expect(verifyRecordFile(files.json, {}).signer.subject).toBe('CN=files signer');
  });

  it('refuses without a signer certificate or key, writing nothing', () => {
    const dir = installDir(false);
    expect(() => writeSignedRecord(dir, buildRecord(input()), [])).toThrow(`No record-signing certificate in ${installPaths(dir).root}`);
    writeFileSync(installPaths(dir).signerCert, signer.certPem);
    expect(() => writeSignedRecord(dir, buildRecord(input()), [])).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_NO_SIGNER' }));
    expect(readdirSync(installPaths(dir).root)).toEqual(['tls']);
  });

  it('verifies against --ca, else --dir\'s CA, else the CA of the install the record sits in', () => {
    const dir = installDir();
    const files = writeSignedRecord(dir, buildRecord(input()), []);
    const other = generateCa({ commonName: 'Other CA' });
    const otherDir = installDir();
    writeFileSync(installPaths(otherDir).caCert, other.certPem);
    const otherCa = join(tempDir(), 'other.pem');
    writeFileSync(otherCa, other.certPem);
    expect(verifyRecordFile(files.json, { dir }).ca).toBe(installPaths(dir).caCert);
    expect(() => verifyRecordFile(files.json, { ca: otherCa })).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_RECORD_INVALID', message: expect.stringMatching(/not issued by the given CA/) }));
    expect(() => verifyRecordFile(files.json, { dir: otherDir })).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_RECORD_INVALID' }));
    // --ca wins over --dir
    expect(verifyRecordFile(files.json, { ca: installPaths(dir).caCert, dir: otherDir }).ca).toBe(installPaths(dir).caCert);
  });

  it('a record outside an install directory is checked against the default install\'s CA', () => {
    const { dir, loose } = looseRecord();
    const saved = process.env.HOSPITAL_API_DIR;
    process.env.HOSPITAL_API_DIR = dir;
    try {
      expect(verifyRecordFile(loose, {}).ca).toBe(installPaths(dir).caCert);
    } finally {
      if (saved === undefined) delete process.env.HOSPITAL_API_DIR;
      else process.env.HOSPITAL_API_DIR = saved;
    }
  });

  it('a record outside any install, with no default install either: a usage error asking for --ca or --dir, naming no CA file the user never gave', async () => {
    const { dir, loose } = looseRecord();
    const nowhere = join(tempDir(), 'no-install');
    const r = await runCli(['record', 'verify', loose, '--json'], { env: { HOSPITAL_API_DIR: nowhere } });
    expect(r.exitCode).toBe(2);
    const error = JSON.parse(String(r.stdout)).error;
    expect(error.code).toBe('ERR_INSTALL_RECORD_NO_CA');
    expect(error.message).toContain(`No CA found beside ${loose}`);
    expect(error.message).not.toContain(nowhere);
    expect(error.hint).toMatch(/--ca <file>.*--dir <install dir>/);
    const chain = await runCli(['record', 'verify', '--chain', join(loose, '..')], { env: { HOSPITAL_API_DIR: nowhere } });
    expect(chain.exitCode).toBe(2);
    expect(String(chain.stderr)).toContain('ERR_INSTALL_RECORD_NO_CA');
    // given --ca or --dir, the same record verifies
    expect((await runCli(['record', 'verify', loose, '--ca', installPaths(dir).caCert], { env: { HOSPITAL_API_DIR: nowhere } })).exitCode).toBe(0);
    expect((await runCli(['record', 'verify', loose, '--dir', dir], { env: { HOSPITAL_API_DIR: nowhere } })).exitCode).toBe(0);
  });

  it('names the file it cannot read, and refuses a changed record', () => {
    const dir = installDir();
    const files = writeSignedRecord(dir, buildRecord(input()), []);
    expect(() => verifyRecordFile(join(dir, 'reports', 'missing.json'), {})).toThrow(expect.objectContaining({ code: 'ERR_FILE_READ', message: expect.stringContaining('missing.json: ENOENT') }));
    const err = (() => { try { verifyRecordFile(join(dir, 'reports', 'missing.json'), {}); } catch (e) { return e as Error; } })();
    expect((err!.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
    writeFileSync(files.json, readFileSync(files.json, 'utf8').replace('rejected', 'accepted'));
    expect(() => verifyRecordFile(files.json, {})).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_RECORD_INVALID', message: expect.stringMatching(/changed after signing/) }));
  });
});
