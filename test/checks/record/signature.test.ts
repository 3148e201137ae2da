/**
 * The record signature checker against every malformed or unfit signature it
 * names a reason for (exact reasons: a different failure for the wrong reason
 * must not pass), signers whose key usage is or is not for signing, the signing
 * time at and just past the signer's validity, CA bundles, and that signDetached
 * really makes a detached signature. Certificates pki.ts cannot make (odd key
 * usages, no key identifiers, validity in the past) are made here with forge.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import forge from 'node-forge';
import { afterAll, describe, expect, it } from 'vitest';
import { signDetached } from '../../../src/tls/cms-sign.js';
import { signerUsageProblem, verifyDetached } from '../../../src/tls/cms-verify.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const ca = generateCa({ commonName: 'Signature Test CA' });
const signer = issueCertificate(ca, { commonName: 'signature signer', usage: 'signing' });
const content = Buffer.from('{"result":"rejected"}\n');

interface CertOptions {
  cn: string;
  issuer: KeyAndCert | null;
  keyUsage?: Record<string, boolean> | null;
  emailProtection?: boolean;
  keyIds?: boolean;
  notBefore?: Date;
  notAfter?: Date;
  subjectCn?: string;
}

/** A certificate with exactly the extensions asked for (forge), issued by `issuer` or self-signed. */
function makeCert(o: CertOptions): KeyAndCert {
  const keys = forge.pki.rsa.generateKeyPair(1024);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = `01${randomBytes(8).toString('hex')}`;
  cert.validity.notBefore = o.notBefore ?? new Date(Date.now() - 3_600_000);
  cert.validity.notAfter = o.notAfter ?? new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: o.subjectCn ?? o.cn }]);
  const issuerCert = o.issuer ? forge.pki.certificateFromPem(o.issuer.certPem) : null;
  cert.setIssuer(issuerCert ? issuerCert.subject.attributes : [{ name: 'commonName', value: o.cn }]);
  const ext: object[] = [];
  if (o.issuer === null) ext.push({ name: 'basicConstraints', cA: true }, { name: 'keyUsage', keyCertSign: true });
  if (o.keyUsage) ext.push({ name: 'keyUsage', ...o.keyUsage });
  if (o.emailProtection) ext.push({ name: 'extKeyUsage', emailProtection: true });
  if (o.keyIds) ext.push({ name: 'subjectKeyIdentifier' });
  cert.setExtensions(ext as never);
  const signingKey = o.issuer ? forge.pki.privateKeyFromPem(o.issuer.keyPem) : keys.privateKey;
  cert.sign(signingKey as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: forge.pki.privateKeyToPem(keys.privateKey) };
}

/** Re-encodes a signature PEM after `edit` changed its SignerInfo fields. */
function editSignerInfo(pem: string, edit: (fields: forge.asn1.Asn1[]) => forge.asn1.Asn1[]): string {
  const msg = forge.pem.decode(pem)[0]!;
  const info = forge.asn1.fromDer(msg.body);
  const signedData = ((info.value as forge.asn1.Asn1[])[1]!.value as forge.asn1.Asn1[])[0]!;
  const parts = signedData.value as forge.asn1.Asn1[];
  const signerInfo = (parts[parts.length - 1]!.value as forge.asn1.Asn1[])[0]!;
  signerInfo.value = edit(signerInfo.value as forge.asn1.Asn1[]);
  return forge.pem.encode({ type: 'PKCS7', body: forge.asn1.toDer(info).getBytes() });
}

function editSignedData(pem: string, edit: (parts: forge.asn1.Asn1[]) => forge.asn1.Asn1[]): string {
  const msg = forge.pem.decode(pem)[0]!;
  const info = forge.asn1.fromDer(msg.body);
  const signedData = ((info.value as forge.asn1.Asn1[])[1]!.value as forge.asn1.Asn1[])[0]!;
  signedData.value = edit(signedData.value as forge.asn1.Asn1[]);
  return forge.pem.encode({ type: 'PKCS7', body: forge.asn1.toDer(info).getBytes() });
}

const C = forge.asn1.Class.CONTEXT_SPECIFIC;
const U = forge.asn1.Class.UNIVERSAL;

describe('signatures the checker cannot read, each with its own reason', () => {
  const good = signDetached(content, signer.certPem, signer.keyPem);

  it('no PEM block; a PEM that is not CMS SignedData', () => {
    for (const text of ['', 'not a signature']) {
      expect(verifyDetached(content, text, ca.certPem, 'record')).toEqual({ ok: false, reason: 'unreadable signature: Invalid PEM formatted message.', signer: null, signingTime: null });
    }
    // a CMS ContentInfo of type data, not signedData
    const data = forge.asn1.create(U, forge.asn1.Type.SEQUENCE, true, [
      forge.asn1.create(U, forge.asn1.Type.OID, false, forge.asn1.oidToDer(forge.pki.oids.data as string).getBytes()),
    ]);
    const pem = forge.pem.encode({ type: 'PKCS7', body: forge.asn1.toDer(data).getBytes() });
    expect(verifyDetached(content, pem, ca.certPem, 'record').reason).toBe('unreadable signature: not a CMS SignedData');
  });

  it('no signer, no signed attributes, no signature value', () => {
    const noSigner = editSignedData(good, (parts) => [...parts.slice(0, -1), forge.asn1.create(U, forge.asn1.Type.SET, true, [])]);
    expect(verifyDetached(content, noSigner, ca.certPem, 'record').reason).toBe('unreadable signature: no signer in the signature');
    const noAttrs = editSignerInfo(good, (f) => f.filter((x) => !(x.tagClass === C && x.type === 0)));
    expect(verifyDetached(content, noAttrs, ca.certPem, 'record').reason).toBe('unreadable signature: the signature has no signed attributes');
    const noValue = editSignerInfo(good, (f) => f.filter((x) => !(x.tagClass === U && x.type === forge.asn1.Type.OCTETSTRING)));
    expect(verifyDetached(content, noValue, ca.certPem, 'record').reason).toBe('unreadable signature: no signature value');
  });

  it('no certificates in the signature: nothing to verify with', () => {
    const noCerts = editSignedData(good, (parts) => parts.filter((x) => !(x.tagClass === C && x.type === 0)));
    const r = verifyDetached(content, noCerts, ca.certPem, 'record');
    expect(r.reason).toBe('the signature does not match the signed attributes (or no signer certificate)');
    expect(r.signingTime).not.toBeNull();
  });

  it('a garbled signature value', () => {
    // one bit flipped: replacing the first byte failed to change it once in 256 runs (when it was already that byte)
    const garbled = editSignerInfo(good, (f) =>
      f.map((x) => (x.tagClass === U && x.type === forge.asn1.Type.OCTETSTRING ? forge.asn1.create(U, x.type, false, `${String.fromCharCode(String(x.value).charCodeAt(0) ^ 1)}${String(x.value).slice(1)}`) : x)),
    );
    expect(verifyDetached(content, garbled, ca.certPem, 'record')).toMatchObject({ ok: false, reason: 'the signature does not match the signed attributes (or no signer certificate)', signer: null });
  });

  it('changed content names the signer and the reason', () => {
    const r = verifyDetached(Buffer.from('{"result":"accepted"}\n'), good, ca.certPem, 'record');
    expect(r.reason).toBe('the record does not match its signature (it changed after signing)');
    expect(r.signer!.subject).toBe('CN=signature signer');
  });

  it('a digest other than SHA-256 (openssl -md sha512)', async () => {
    const d = tempDir();
    const f = (n: string, v: string | Buffer) => (writeFileSync(join(d, n), v), join(d, n));
    const out = join(d, 'sig.pem');
    const made = await execa('openssl', ['cms', '-sign', '-binary', '-md', 'sha512', '-in', f('r.json', content), '-signer', f('s.pem', signer.certPem),
      '-inkey', f('s.key', signer.keyPem), '-outform', 'PEM', '-out', out], { reject: false });
    expect(made.exitCode, String(made.stderr)).toBe(0);
    expect(verifyDetached(content, readFileSync(out, 'utf8'), ca.certPem, 'record').reason).toBe('the digest algorithm is not SHA-256');
  });

  it('signDetached leaves the content out of the signature (detached)', () => {
    const der = Buffer.from(forge.pem.decode(signDetached(content, signer.certPem, signer.keyPem))[0]!.body, 'binary');
    expect(der.includes(content)).toBe(false);
    expect(der.includes(Buffer.from('"result"'))).toBe(false);
  });
});

describe('which signers may sign records', () => {
  const usage = (o: Partial<CertOptions>) => signerUsageProblem(new X509Certificate(makeCert({ cn: 's', issuer: ca, emailProtection: true, ...o }).certPem));

  it('digitalSignature or nonRepudiation, with emailProtection', () => {
    expect(usage({ keyUsage: { digitalSignature: true } })).toBeNull();
    expect(usage({ keyUsage: { nonRepudiation: true } })).toBeNull();
    expect(usage({ keyUsage: { digitalSignature: true, nonRepudiation: true } })).toBeNull();
  });

  it('refuses a key usage for neither, no key usage at all, and no emailProtection', () => {
    const lacks = 'the signer certificate is not for signing (its key usage lacks digitalSignature and nonRepudiation)';
    expect(usage({ keyUsage: { keyEncipherment: true } })).toBe(lacks);
    expect(usage({ keyUsage: null })).toBe(lacks);
    expect(usage({ keyUsage: { digitalSignature: true }, emailProtection: false })).toBe('the signer certificate is not for signing (its extended key usage lacks emailProtection)');
  });

  it('a non-RSA signer certificate cannot be read', async () => {
    const d = tempDir();
    const f = (n: string, v: string) => (writeFileSync(join(d, n), v), join(d, n));
    f('ca.pem', ca.certPem);
    f('ca.key', ca.keyPem);
    f('ext.cnf', 'keyUsage=digitalSignature\nextendedKeyUsage=emailProtection\n');
    const run = (args: string[]) => execa('openssl', args, { cwd: d });
    await run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ec.key']);
    await run(['req', '-new', '-key', 'ec.key', '-subj', '/CN=ec signer', '-out', 'ec.csr']);
    await run(['x509', '-req', '-in', 'ec.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'ext.cnf', '-out', 'ec.pem']);
    expect(signerUsageProblem(new X509Certificate(readFileSync(join(d, 'ec.pem'))))).toBe('the signer certificate cannot be read (RSA expected)');
  });
});

describe('the signer against the CA and its validity at signing time', () => {
  it('a CA file without a certificate is named as the CA', () => {
    expect(() => verifyDetached(content, signDetached(content, signer.certPem, signer.keyPem), 'no certificate here', 'record')).toThrow('Invalid TLS material in CA: no PEM certificate found');
  });

  it('a CA bundle: the signer needs only one of them to be its issuer', () => {
    const sig = signDetached(content, signer.certPem, signer.keyPem);
    expect(verifyDetached(content, sig, generateCa({ commonName: 'First' }).certPem + ca.certPem, 'record').ok).toBe(true);
    expect(verifyDetached(content, sig, ca.certPem + generateCa({ commonName: 'Last' }).certPem, 'record').ok).toBe(true);
  });

  it('a signer from a CA with the same name but another key is refused even without key identifiers', () => {
    const realCa = makeCert({ cn: 'Twin CA', issuer: null });
    const twinCa = makeCert({ cn: 'Twin CA', issuer: null });
    const twinSigner = makeCert({ cn: 'twin signer', issuer: twinCa, keyUsage: { digitalSignature: true }, emailProtection: true });
    const realSigner = makeCert({ cn: 'real signer', issuer: realCa, keyUsage: { digitalSignature: true }, emailProtection: true });
    // the name matches, so only the signature on the certificate tells them apart
    expect(new X509Certificate(twinSigner.certPem).checkIssued(new X509Certificate(realCa.certPem))).toBe(true);
    expect(verifyDetached(content, signDetached(content, twinSigner.certPem, twinSigner.keyPem), realCa.certPem, 'record').reason).toBe('the signer certificate is not issued by the given CA');
    expect(verifyDetached(content, signDetached(content, realSigner.certPem, realSigner.keyPem), realCa.certPem, 'record').ok).toBe(true);
  });

  it('signing at the first and last second of validity is fine; a second outside is not', () => {
    const notBefore = new Date(Math.floor(Date.now() / 1000) * 1000 - 86_400_000);
    const notAfter = new Date(notBefore.getTime() + 3_600_000);
    const s = makeCert({ cn: 'short-lived signer', issuer: ca, keyUsage: { digitalSignature: true }, emailProtection: true, notBefore, notAfter });
    const at = (d: Date) => verifyDetached(content, signDetached(content, s.certPem, s.keyPem, d), ca.certPem, 'record');
    expect(at(notBefore)).toMatchObject({ ok: true, signingTime: notBefore.toISOString() });
    expect(at(notAfter).ok).toBe(true);
    const outside = 'the signer certificate was not valid at signing time';
    expect(at(new Date(notBefore.getTime() - 1000))).toMatchObject({ ok: false, reason: outside, signingTime: new Date(notBefore.getTime() - 1000).toISOString() });
    expect(at(new Date(notAfter.getTime() + 1000)).reason).toBe(outside);
    expect(at(new Date(notAfter.getTime() + 1000)).signer!.subject).toBe('CN=short-lived signer');
  });
});
