/**
 * The tamper-evident audit log (issue 46): each line names the SHA-256 of the
 * line before it, across rotation too, and seals signed by a certificate of
 * the install's CA cover the chain. Written by the real writer (openAuditLog,
 * real files), tampered with as someone with root would, and read back by the
 * real `hospital-api audit verify` and `audit disclosures`, which name lines
 * by number and never print their content.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chainStatePath, lineHash, openAuditLog, sealStatement, type AuditLog, type AuditRecord } from '../../src/api/audit/audit.js';
import { loadConfig } from '../../src/api/server/config.js';
import { HospitalApiError } from '../../src/errors/index.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../src/tls/pki.js';
import { AUDIT_SEAL_COMMON_NAME } from '../../src/tls/cms-verify.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { writeFileAtomic, writeSecretFile } from '../../src/util/atomic-write.js';
import { installNative } from '../helpers/native-install.js';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

afterAll(() => removeTempDirs());

let ca: KeyAndCert;
let signer: KeyAndCert;
let foreign: KeyAndCert;
let recordSigner: KeyAndCert;
let caFile: string;

beforeAll(() => {
  ca = generateCa({ commonName: 'Audit Test CA' });
  // the audit-seal certificate as install issues it (src/install/tls.ts): only it may sign seals
  signer = issueCertificate(ca, { commonName: AUDIT_SEAL_COMMON_NAME, usage: 'signing' });
  recordSigner = issueCertificate(ca, { commonName: 'Hospital API acceptance record signer', usage: 'signing' });
  const otherCa = generateCa({ commonName: 'Someone Else CA' });
  foreign = issueCertificate(otherCa, { commonName: 'foreign signer', usage: 'signing' });
  caFile = join(tempDir(), 'ca.pem');
  writeFileSync(caFile, ca.certPem);
});

function record(i: number, patient = `care-${i}`, time = new Date().toISOString()): AuditRecord {
  return {
    time, phase: 'end', requestId: `req-${i}`, callerRequestId: null, caller: '10.0.0.7', platformCareId: patient,
    identifierSystem: 'urn:test', fhirPatientId: `fhir-${patient}`, decision: 'granted', code: null, pages: 1, resources: 3 + i, bytes: 1000 + i,
    durationMs: 5, status: 200, aborted: false,
  };
}

const lines = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter((l) => l !== '');
const rewrite = (path: string, kept: string[]): void => writeFileSync(path, kept.map((l) => `${l}\n`).join(''));

/** Writes `n` records, one batch each, with the given key, and closes the log (which seals them). */
async function writeLog(path: string, n: number, key: KeyAndCert | null = signer, from = 1): Promise<void> {
  const log = openAuditLog(path, () => {}, key ? { seal: key } : {});
  for (let i = from; i < from + n; i++) await log.write(record(i));
  await log.close();
}

async function verify(path: string, ...extra: string[]): Promise<{ code: number; out: string; json: { ok: boolean; result: { brokenLines: Array<{ line: number; reason: string }>; files: Array<{ file: string; brokenLines: Array<{ line: number; reason: string }>; legacy: number }> } } }> {
  const table = await runCli(['audit', 'verify', path, '--ca', caFile, ...extra]);
  const json = await runCli(['audit', 'verify', path, '--ca', caFile, '--json', ...extra]);
  expect(json.exitCode).toBe(table.exitCode);
  return { code: table.exitCode ?? -1, out: String(table.stdout), json: JSON.parse(String(json.stdout)) };
}

describe('the chain and its seals, as written', () => {
  it('links each line to the one before it, seals them when the log closes, and the seal is verifiable with plain openssl cms', async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 3);
    const text = lines(path);
    expect(text).toHaveLength(4);
    const parsed = text.map((l) => JSON.parse(l) as { prev: string | null; phase: string; first: string | null; lines: number; head: string; cms: string });
    expect(parsed[0]!.prev).toBeNull();
    for (let i = 1; i < text.length; i++) expect(parsed[i]!.prev).toBe(lineHash(`${text[i - 1]}\n`));
    const seal = parsed[3]!;
    expect(seal).toMatchObject({ phase: 'seal', lines: 3, first: lineHash(`${text[0]}\n`), head: lineHash(`${text[2]}\n`) });
    // the real openssl binary: the seal's signature chains to the CA, and what it prints is the statement
    const dir = tempDir();
    writeFileSync(join(dir, 'seal.der'), Buffer.from(seal.cms, 'base64'));
    const statement = execFileSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', join(dir, 'seal.der'), '-CAfile', caFile, '-binary'], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    expect(statement).toBe(sealStatement(seal.first, seal.lines, seal.head));
    // and not against another CA
    const other = join(dir, 'other.pem');
    writeFileSync(other, generateCa({ commonName: 'Not ours' }).certPem);
    expect(() => execFileSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', join(dir, 'seal.der'), '-CAfile', other, '-binary'], { stdio: 'pipe' })).toThrow();
    // the state file beside the log keeps the last seal
    expect(JSON.parse(readFileSync(chainStatePath(path), 'utf8'))).toMatchObject({ lines: 4, head: lineHash(`${text[3]}\n`), seal: text[3] });
  });

  it('seals within the interval while lines are written, without waiting for the close', async () => {
    const path = join(tempDir(), 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: signer, sealIntervalMs: 50 });
    await log.write(record(1));
    await until(() => lines(path).some((l) => l.includes('"phase":"seal"')), { what: 'a seal line' });
    await log.close();
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
  });

  it('lines an earlier process left unsealed are sealed before the first new line', async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 2, null);
    await writeLog(path, 1, signer, 3);
    const phases = lines(path).map((l) => JSON.parse(l) as { phase: string; lines?: number });
    expect(phases.map((p) => p.phase)).toEqual(['end', 'end', 'seal', 'end', 'seal']);
    expect(phases[2]!.lines).toBe(2);
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
  });

  it('two writers on one file (a restart overlapping the old process): each goes on from the other\'s last line', async () => {
    const path = join(tempDir(), 'audit.log');
    const a = openAuditLog(path, () => {}, { seal: signer });
    const b = openAuditLog(path, () => {}, { seal: signer });
    for (let i = 1; i <= 6; i++) await (i % 2 ? a : b).write(record(i));
    await a.close();
    await b.close();
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
  });

  it('an untouched log passes audit verify (exit 0)', async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 5);
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('chained and sealed');
  });
});

describe('audit verify finds tampering, by line number, never printing a line', () => {
  /** A log of five records, a seal, five more, a seal (lines 1–5, 6 seal, 7–11, 12 seal). */
  async function twoSeals(): Promise<string> {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 5, signer, 1);
    await writeLog(path, 5, signer, 6);
    expect(lines(path).map((l) => (JSON.parse(l) as { phase: string }).phase).filter((p) => p === 'seal')).toHaveLength(2);
    return path;
  }

  const expectProblem = (r: Awaited<ReturnType<typeof verify>>, line: number, reason: RegExp): void => {
    expect(r.code, r.out).toBe(1);
    expect(r.json.ok).toBe(false);
    expect(r.json.result.brokenLines.some((b) => b.line === line && reason.test(b.reason)), JSON.stringify(r.json.result.brokenLines)).toBe(true);
    expect(r.out).not.toMatch(/care-/);
  };

  it('an edited line', async () => {
    const path = await twoSeals();
    const l = lines(path);
    l[2] = l[2]!.replace('"bytes":1003', '"bytes":9');
    rewrite(path, l);
    expectProblem(await verify(path), 3, /^edited/);
  });

  it('a line deleted in the middle', async () => {
    const path = await twoSeals();
    const l = lines(path);
    l.splice(7, 1); // line 8
    rewrite(path, l);
    expectProblem(await verify(path), 8, /1 line\(s\) removed before this line/);
  });

  it('the last lines deleted after a seal covered them (before the seal)', async () => {
    const path = await twoSeals();
    const l = lines(path);
    l.splice(9, 2); // lines 10 and 11, the seal at 12 stays
    rewrite(path, l);
    expectProblem(await verify(path), 10, /2 line\(s\) removed before this line/);
  });

  it('the last lines deleted with their seal: the seal kept in <log>.chain names them', async () => {
    const path = await twoSeals();
    const l = lines(path);
    rewrite(path, l.slice(0, 8)); // lines 9–12 gone, the file ends right after a valid stretch
    expectProblem(await verify(path), 9, /lines 9–12 removed/);
  });

  it('two lines swapped', async () => {
    const path = await twoSeals();
    const l = lines(path);
    [l[2], l[3]] = [l[3]!, l[2]!];
    rewrite(path, l);
    expectProblem(await verify(path), 3, /out of order/);
  });

  it('a seal dropped', async () => {
    const path = await twoSeals();
    const l = lines(path);
    l.splice(5, 1); // the first seal, line 6
    rewrite(path, l);
    expectProblem(await verify(path), 6, /1 line\(s\) removed before this line/);
  });

  it('a line inserted, linked to the one before it: the next line no longer follows it', async () => {
    const path = await twoSeals();
    const l = lines(path);
    const forged = `${JSON.stringify(record(99, 'care-forged')).slice(0, -1)},"prev":${JSON.stringify(lineHash(`${l[2]}\n`))}}`;
    l.splice(3, 0, forged); // the forged line is line 4
    rewrite(path, l);
    expectProblem(await verify(path), 5, /a line inserted before it: it follows line 3/);
  });

  it('the first line removed: the seal names the file by its first line', async () => {
    const path = await twoSeals();
    rewrite(path, lines(path).slice(1));
    expectProblem(await verify(path), 5, /1 line\(s\) removed from the start of the file/);
  });

  it('a foreign seal: signed by a certificate of another CA', async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 3, foreign);
    expectProblem(await verify(path), 4, /foreign or altered seal: the signer certificate is not issued by the given CA/);
  });

  it("a seal signed by the record signer, though of the install's CA: foreign (only the audit-seal certificate seals)", async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 3, recordSigner);
    expectProblem(await verify(path), 4, /foreign or altered seal: the signer is not the audit-seal certificate \(its subject lacks CN=hospital-api audit seal\)/);
  });

  it('an install without an audit-seal key: its unsealed lines are "no seal key configured", not a missing seal; with one, a missing seal', async () => {
    const dir = tempDir();
    const p = installPaths(dir);
    mkdirSync(p.tls, { recursive: true });
    writeFileSync(p.caCert, ca.certPem);
    const path = join(dir, 'audit.log');
    const log = openAuditLog(path);
    const old = new Date(Date.now() - 5 * 60_000).toISOString();
    for (let i = 1; i <= 3; i++) await log.write(record(i, `care-${i}`, old));
    await log.close();
    const unsealed = await runCli(['audit', 'verify', path, '--dir', dir]);
    expect(String(unsealed.stdout)).toContain('NOT SEALED: no seal key configured (the install has no tls/audit-seal.pem): the newest 3 line(s)');
    expect(String(unsealed.stdout)).not.toContain('missing seal');
    expect(unsealed.exitCode).toBe(0);
    const json = JSON.parse(String((await runCli(['audit', 'verify', path, '--dir', dir, '--json'])).stdout));
    expect(json.result).toMatchObject({ ok: true, sealKeyConfigured: false, unsealedNoKey: 3 });
    writeFileSync(p.auditSealCert, signer.certPem);
    writeFileSync(p.auditSealKey, signer.keyPem, { mode: 0o600 });
    const sealed = await runCli(['audit', 'verify', path, '--dir', dir]);
    expect(sealed.exitCode).toBe(1);
    expect(String(sealed.stdout)).toMatch(/missing seal: lines 1–3 are covered by no seal/);
  });

  it('lines nobody sealed (no key), older than the interval: a missing seal', async () => {
    const path = join(tempDir(), 'audit.log');
    const log = openAuditLog(path);
    const old = new Date(Date.now() - 5 * 60_000).toISOString();
    for (let i = 1; i <= 3; i++) await log.write(record(i, `care-${i}`, old));
    await log.close();
    expectProblem(await verify(path), 1, /missing seal: lines 1–3 are covered by no seal/);
  });
});

describe('rotation, restarts and legacy lines', () => {
  it('a log moved away by logrotate while serve runs: the next file goes on from its last line, and the pair passes', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.log');
    const log: AuditLog = openAuditLog(path, () => {}, { seal: signer });
    await log.write(record(1));
    await log.write(record(2));
    renameSync(path, `${path}.1`);
    await log.write(record(3));
    await log.close();
    expect((JSON.parse(lines(path)[0]!) as { prev: string }).prev).toBe(lineHash(`${lines(`${path}.1`).at(-1)}\n`));
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
    expect(r.json.result.files.map((f) => f.file)).toEqual([`${path}.1`, path]);
  });

  it('serve restarted after the rotation: the chain state finds the rotated file by inode and continues from it', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.log');
    await writeLog(path, 2);
    renameSync(path, `${path}-20260101`);
    await writeLog(path, 2, signer, 3);
    expect((JSON.parse(lines(path)[0]!) as { prev: string }).prev).toBe(lineHash(`${lines(`${path}-20260101`).at(-1)}\n`));
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
    expect(r.json.result.files.map((f) => f.file)).toEqual([`${path}-20260101`, path]);
  });

  it('lines deleted from the end of a rotated file: named at the first line of the next', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: signer });
    for (let i = 1; i <= 3; i++) await log.write(record(i));
    renameSync(path, `${path}.1`);
    await log.write(record(4));
    await log.close();
    rewrite(`${path}.1`, lines(`${path}.1`).slice(0, 2));
    const r = await verify(path);
    expect(r.code, r.out).toBe(1);
    const last = r.json.result.files.at(-1)!;
    expect(last.brokenLines).toEqual([expect.objectContaining({ line: 1, reason: expect.stringMatching(/does not follow the last line of audit\.log\.1/) })]);
  });

  it('a rotated file compressed by logrotate (.gz) is read in its place', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: signer });
    await log.write(record(1));
    renameSync(path, `${path}.1`);
    await log.write(record(2));
    await log.close();
    writeFileSync(`${path}.1.gz`, gzipSync(readFileSync(`${path}.1`)));
    rmSync(`${path}.1`);
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
    expect(r.json.result.files.map((f) => f.file)).toEqual([`${path}.1.gz`, path]);
  });

  it('lines written before the chain are reported as unchained legacy lines, and the chain goes on from the last of them', async () => {
    const path = join(tempDir(), 'audit.log');
    writeFileSync(path, `${JSON.stringify(record(1))}\n${JSON.stringify(record(2))}\n`);
    await writeLog(path, 2, signer, 3);
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('NOTE: 2 unchained legacy line(s)');
    expect(r.json.result.files[0]!.legacy).toBe(2);
    // a legacy line slipped in among chained ones is not one
    const l = lines(path);
    l.splice(3, 0, JSON.stringify(record(9)));
    rewrite(path, l);
    const bad = await verify(path);
    expect(bad.code).toBe(1);
    expect(bad.json.result.brokenLines).toContainEqual(expect.objectContaining({ line: 4, reason: expect.stringMatching(/no prev/) }));
  });

  it('without a CA to check the seals against, chained lines do not pass', async () => {
    const path = join(tempDir(), 'audit.log');
    await writeLog(path, 1);
    const r = await runCli(['audit', 'verify', path]);
    expect(r.exitCode).toBe(1);
    expect(String(r.stdout)).toContain('NOT CHECKED');
  });
});

describe('the seal key in the settings', () => {
  const base = { PLATFORM_API_URL: 'http://127.0.0.1:1', FHIR_BASE_URL: 'https://127.0.0.1:2/fhir', FHIR_API_KEY: 'k', PLATFORM_IDENTIFIER_SYSTEM: 'urn:x' };
  const code = (f: () => unknown): string => {
    try {
      f();
      return 'none';
    } catch (err) {
      return err instanceof HospitalApiError ? `${err.code} ${String(err.params.name)}` : String(err);
    }
  };

  it('AUDIT_SEAL_CERT_FILE and AUDIT_SEAL_KEY_FILE go together, the record signer is refused, and a key that cannot sign stops the log from opening', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'seal.pem'), signer.certPem);
    writeFileSync(join(dir, 'seal.key'), signer.keyPem, { mode: 0o600 });
    writeFileSync(join(dir, 'not-a-key'), 'nothing here');
    expect(code(() => loadConfig({}, { ...base, AUDIT_SEAL_CERT_FILE: 'seal.pem' }, dir))).toBe('ERR_CONFIG_INVALID AUDIT_SEAL_KEY_FILE');
    expect(code(() => loadConfig({}, { ...base, AUDIT_SEAL_KEY_FILE: 'seal.key' }, dir))).toBe('ERR_CONFIG_INVALID AUDIT_SEAL_CERT_FILE');
    expect(code(() => loadConfig({}, { ...base, AUDIT_SEAL_CERT_FILE: 'seal.pem', AUDIT_SEAL_KEY_FILE: 'not-a-key' }, dir))).toBe('ERR_CONFIG_INVALID AUDIT_SEAL_KEY_FILE');
    const config = loadConfig({}, { ...base, AUDIT_SEAL_CERT_FILE: 'seal.pem', AUDIT_SEAL_KEY_FILE: 'seal.key' }, dir);
    expect(config.auditSeal).toEqual({ certPem: signer.certPem, keyPem: signer.keyPem, certFile: join(dir, 'seal.pem'), keyFile: join(dir, 'seal.key') });
    // the record signer (or any certificate but the audit seal) stops the start: the API must not hold its key
    writeFileSync(join(dir, 'signer.pem'), recordSigner.certPem);
    writeFileSync(join(dir, 'signer.key'), recordSigner.keyPem, { mode: 0o600 });
    expect(code(() => loadConfig({}, { ...base, AUDIT_SEAL_CERT_FILE: 'signer.pem', AUDIT_SEAL_KEY_FILE: 'signer.key' }, dir))).toBe('ERR_CONFIG_INVALID AUDIT_SEAL_CERT_FILE');
    expect(() => openAuditLog(join(dir, 'audit.log'), () => {}, { seal: { certPem: signer.certPem, keyPem: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n' } })).toThrow();
  });

  it("a key that is not the certificate's stops the start, naming the file and never the key", () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'seal.pem'), signer.certPem);
    // a key that signs, from the same CA, but of another certificate: its seals would be foreign to audit verify
    writeFileSync(join(dir, 'other.key'), recordSigner.keyPem, { mode: 0o600 });
    let err: unknown;
    try {
      loadConfig({}, { ...base, AUDIT_SEAL_CERT_FILE: 'seal.pem', AUDIT_SEAL_KEY_FILE: 'other.key' }, dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HospitalApiError);
    expect((err as HospitalApiError).code).toBe('ERR_CONFIG_INVALID');
    expect((err as HospitalApiError).params.name).toBe('AUDIT_SEAL_KEY_FILE');
    expect((err as Error).message).toContain("does not hold the certificate's key");
    expect((err as Error).message).not.toContain(recordSigner.keyPem.split('\n')[1]!);
  });
});

describe('the seal key after cert renew, without a restart (issue 46)', () => {
  /** The certificate (PEM) that signed a seal line, as plain openssl reads it, after checking the seal against `ca`. */
  const sealSigner = (line: string, ca: string): string => {
    const dir = tempDir();
    writeFileSync(join(dir, 'seal.der'), Buffer.from((JSON.parse(line) as { cms: string }).cms, 'base64'));
    execFileSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', join(dir, 'seal.der'), '-CAfile', ca, '-binary', '-signer', join(dir, 'signer.pem'), '-out', join(dir, 'statement')], { stdio: 'pipe' });
    return new X509Certificate(readFileSync(join(dir, 'signer.pem'))).fingerprint256;
  };
  const seals = (path: string): string[] => (existsSync(path) ? lines(path) : []).filter((l) => l.includes('"phase":"seal"'));
  const fingerprint = (pem: string): string => new X509Certificate(pem).fingerprint256;

  it('a renewed pair seals from the next seal; a half-replaced pair (new key, old certificate) keeps the pair in use', async () => {
    const dir = tempDir();
    const certFile = join(dir, 'seal.pem');
    const keyFile = join(dir, 'seal.key');
    writeFileAtomic(certFile, signer.certPem);
    writeSecretFile(keyFile, signer.keyPem);
    const renewed = issueCertificate(ca, { commonName: AUDIT_SEAL_COMMON_NAME, usage: 'signing' });
    const events: string[] = [];
    const path = join(dir, 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: { certPem: signer.certPem, keyPem: signer.keyPem, certFile, keyFile }, sealIntervalMs: 50, onSealKey: (e) => events.push('reloaded' in e ? 'reloaded' : 'kept') });
    const sealAfter = async (i: number): Promise<string> => {
      const before = seals(path).length;
      await log.write(record(i));
      await until(() => seals(path).length > before, { what: `a seal after line ${i}` });
      return seals(path).at(-1)!;
    };
    expect(sealSigner(await sealAfter(1), caFile)).toBe(fingerprint(signer.certPem));
    // renew writes the key first (src/install/cert-renew.ts): that key does not fit the certificate in its file yet
    writeSecretFile(keyFile, renewed.keyPem);
    expect(sealSigner(await sealAfter(2), caFile)).toBe(fingerprint(signer.certPem));
    writeFileAtomic(certFile, renewed.certPem);
    expect(sealSigner(await sealAfter(3), caFile)).toBe(fingerprint(renewed.certPem));
    await log.close();
    expect(events).toEqual(['kept', 'reloaded']);
    const r = await verify(path);
    expect(r.code, r.out).toBe(0);
  });

  it('`hospital-api cert renew` on an install: the log opened with its settings seals with the new audit-seal certificate, verified by plain openssl cms, and audit verify passes across the change', async () => {
    const dir = tempDir();
    await installNative({ dir });
    const paths = installPaths(dir);
    const env = readEnvFile(paths.apiEnv);
    const config = loadConfig({}, {
      PLATFORM_API_URL: 'http://127.0.0.1:1', FHIR_BASE_URL: 'https://127.0.0.1:2/fhir', FHIR_API_KEY: 'k', PLATFORM_IDENTIFIER_SYSTEM: 'urn:x',
      AUDIT_SEAL_CERT_FILE: env.AUDIT_SEAL_CERT_FILE!, AUDIT_SEAL_KEY_FILE: env.AUDIT_SEAL_KEY_FILE!,
    }, dir);
    const oldSeal = fingerprint(readFileSync(paths.auditSealCert, 'utf8'));
    const path = join(tempDir(), 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: config.auditSeal!, sealIntervalMs: 50 });
    await log.write(record(1));
    await until(() => seals(path).length === 1, { what: 'the first seal' });
    const renew = await runCli(['cert', 'renew', '--dir', dir]);
    expect(renew.exitCode, String(renew.stderr)).toBe(0);
    const newSeal = fingerprint(readFileSync(paths.auditSealCert, 'utf8'));
    expect(newSeal).not.toBe(oldSeal);
    await log.write(record(2));
    await log.close();
    const [before, after] = seals(path);
    expect(sealSigner(before!, paths.caCert)).toBe(oldSeal);
    expect(sealSigner(after!, paths.caCert)).toBe(newSeal);
    const r = await runCli(['audit', 'verify', path, '--ca', paths.caCert]);
    expect(r.exitCode, String(r.stdout)).toBe(0);
  });
});

describe('hospital-api audit disclosures', () => {
  // a second apart (lines a day apart would each lack their seal: the writer seals within a minute)
  const base = Date.now() - 60_000;
  const at = (i: number): string => new Date(base + i * 1000).toISOString();

  async function patientLog(): Promise<string> {
    const dir = tempDir();
    const path = join(dir, 'audit.log');
    const log = openAuditLog(path, () => {}, { seal: signer });
    await log.write({ ...record(1, 'care-A'), time: at(1) });
    await log.write({ ...record(2, 'care-B'), time: at(2) });
    await log.write({ ...record(3, 'care-A'), time: at(3), decision: 'denied', bytes: 0, resources: 0, status: 403 });
    renameSync(path, `${path}.1`);
    await log.write({ ...record(4, 'care-A'), time: at(4), caller: '10.0.0.9' });
    await log.write({ ...record(5, 'care-A'), time: at(5), phase: 'started', bytes: 0, resources: 0 });
    await log.close();
    return path;
  }

  it("lists every time the patient's data went out, rotated files included, by care id or FHIR id, in a window", async () => {
    const path = await patientLog();
    const r = await runCli(['audit', 'disclosures', path, '--ca', caFile, '--patient', 'care-A', '--json']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const doc = JSON.parse(String(r.stdout)) as { result: { disclosures: Array<{ requestId: string; caller: string; decision: string; bytes: number | null; file: string }> } };
    expect(doc.result.disclosures.map((d) => [d.requestId, d.decision, d.caller, d.bytes])).toEqual([
      ['req-1', 'granted', '10.0.0.7', 1001],
      ['req-4', 'granted', '10.0.0.9', 1004],
      ['req-5', 'started, no end line', '10.0.0.7', null],
    ]);
    expect(doc.result.disclosures[0]!.file).toBe(`${path}.1`);
    const byFhir = await runCli(['audit', 'disclosures', path, '--ca', caFile, '--patient', 'fhir-care-A', '--since', at(2), '--until', at(4), '--csv']);
    expect(byFhir.exitCode, String(byFhir.stderr)).toBe(0);
    const csv = String(byFhir.stdout).trim().split('\n');
    expect(csv[0]).toBe('time,caller,requestId,decision,resources,bytes,platformCareId,fhirPatientId,file,line');
    expect(csv.slice(1).map((row) => row.split(',')[2])).toEqual(['req-4']);
  });

  it('refuses a log that fails audit verify, with a stable code', async () => {
    const path = await patientLog();
    const l = lines(path);
    rewrite(path, [l[1]!, l[0]!, ...l.slice(2)]);
    const r = await runCli(['audit', 'disclosures', path, '--ca', caFile, '--patient', 'care-A']);
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toContain('ERR_API_AUDIT_UNVERIFIED');
    expect(String(r.stdout)).not.toContain('req-');
    expect(existsSync(path)).toBe(true);
  });
});
