/**
 * The record signature on its own: node-forge signs, our verifier and openssl
 * agree, both directions (a signature openssl makes verifies here too), and
 * every kind of damage is caught.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate } from '../../../src/tls/pki.js';
import { signDetached } from '../../../src/tls/cms-sign.js';
import { verifyDetached } from '../../../src/tls/cms-verify.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const ca = generateCa({ commonName: 'Record Test CA' });
const signer = issueCertificate(ca, { commonName: 'record signer', usage: 'signing' });
const content = Buffer.from('{"format":"hospital-api/acceptance-record@1","result":"accepted"}\n');

describe('detached CMS signatures', () => {
  it('verifies its own signature and reports the signer and signing time', () => {
    const at = new Date(Math.floor(Date.now() / 1000) * 1000);
    const r = verifyDetached(content, signDetached(content, signer.certPem, signer.keyPem, at), ca.certPem, 'record');
    expect(r).toMatchObject({ ok: true, reason: null, signingTime: at.toISOString() });
    expect(r.signer!.subject).toBe('CN=record signer');
  });

  it('rejects changed content, another CA, a garbled signature, and a signer from another CA', () => {
    const sig = signDetached(content, signer.certPem, signer.keyPem);
    const changed = Buffer.from(content);
    changed[5] = (changed[5] as number) ^ 1;
    expect(verifyDetached(changed, sig, ca.certPem, 'record').reason).toMatch(/changed after signing/);
    expect(verifyDetached(content, sig, generateCa().certPem, 'record').reason).toMatch(/not issued by the given CA/);
    const der = Buffer.from(sig.replace(/-----[A-Z0-9 ]+-----|\s/g, ''), 'base64');
    der[der.length - 10] = (der[der.length - 10] as number) ^ 0xff; // inside the signature value
    const garbled = `-----BEGIN PKCS7-----\n${der.toString('base64')}\n-----END PKCS7-----\n`;
    expect(verifyDetached(content, garbled, ca.certPem, 'record').ok).toBe(false);
    expect(verifyDetached(content, 'not a signature', ca.certPem, 'record').reason).toMatch(/unreadable/);
    const rogueCa = generateCa({ commonName: 'Record Test CA' }); // same name, other key
    const rogue = issueCertificate(rogueCa, { commonName: 'record signer', usage: 'signing' });
    expect(verifyDetached(content, signDetached(content, rogue.certPem, rogue.keyPem), ca.certPem, 'record').ok).toBe(false);
  });

  it("refuses a record signed by another certificate of the same CA that is not for signing (the gateway's server certificate), as openssl does", async () => {
    const server = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    const sig = signDetached(content, server.certPem, server.keyPem);
    const r = verifyDetached(content, sig, ca.certPem, 'record');
    expect(r.ok).toBe(false);
    expect(r.reason).toMatch(/not for signing.*emailProtection/);
    expect(r.signer!.subject).toBe('CN=127.0.0.1');
    const d = tempDir();
    const f = (n: string, v: string | Buffer) => (writeFileSync(join(d, n), v), join(d, n));
    const openssl = await execa('openssl', ['cms', '-verify', '-binary', '-content', f('r.json', content), '-inform', 'PEM', '-in', f('r.p7s', sig),
      '-CAfile', f('ca.pem', ca.certPem), '-out', '/dev/null'], { reject: false });
    expect(openssl.exitCode).not.toBe(0);
  });

  it('interoperates with openssl both ways', async () => {
    const d = tempDir();
    const f = (n: string, v: string | Buffer) => (writeFileSync(join(d, n), v), join(d, n));
    const rec = f('r.json', content);
    const caFile = f('ca.pem', ca.certPem);
    f('r.json.p7s', signDetached(content, signer.certPem, signer.keyPem));
    const verify = (sig: string) =>
      execa('openssl', ['cms', '-verify', '-binary', '-content', rec, '-inform', 'PEM', '-in', sig, '-CAfile', caFile, '-out', '/dev/null'], { reject: false });
    expect((await verify(join(d, 'r.json.p7s'))).exitCode).toBe(0);
    // and a signature openssl makes (a hospital-provided signer) verifies here
    const sig = join(d, 'openssl.p7s');
    const made = await execa('openssl', ['cms', '-sign', '-binary', '-md', 'sha256', '-in', rec, '-signer', f('s.pem', signer.certPem),
      '-inkey', f('s.key', signer.keyPem), '-outform', 'PEM', '-out', sig], { reject: false });
    expect(made.exitCode, String(made.stderr)).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(verifyDetached(content, readFileSync(sig, 'utf8'), ca.certPem, 'record').ok).toBe(true);
  });
});
