/**
 * Checks a CMS signature made by cms-sign.ts (or any SHA-256 RSA
 * SignedData with signed attributes; content detached or attached, checked
 * against the content given): the content's digest, the signature over
 * the signed attributes, and the signer certificate's chain to the CA.
 * forge can sign but not verify PKCS#7, so the ASN.1 is walked here and the
 * crypto done by node:crypto.
 */
import { createHash, createVerify, X509Certificate } from 'node:crypto';
import forge from 'node-forge';
import { describeCertificate, parsePemBundle, type CertificateInfo } from './inspect.js';

export interface SignatureCheck {
  ok: boolean;
  reason: string | null;
  signer: CertificateInfo | null;
  signingTime: string | null;
}

type Asn1 = forge.asn1.Asn1;
const U = forge.asn1.Class.UNIVERSAL;
const C = forge.asn1.Class.CONTEXT_SPECIFIC;

function children(node: Asn1): Asn1[] {
  return Array.isArray(node.value) ? (node.value as Asn1[]) : [];
}

function oidOf(node: Asn1 | undefined): string {
  return node ? forge.asn1.derToOid(node.value as string) : '';
}

function der(node: Asn1): Buffer {
  return Buffer.from(forge.asn1.toDer(node).getBytes(), 'binary');
}

interface Parsed {
  certificates: X509Certificate[];
  signedAttrs: Asn1;
  signature: Buffer;
  digestOid: string;
}

function parse(pem: string): Parsed {
  // forge throws "Invalid PEM formatted message." when there is no PEM block at all
  const msg = forge.pem.decode(pem)[0] as forge.pem.ObjectPEM;
  const info = forge.asn1.fromDer(msg.body);
  if (oidOf(children(info)[0]) !== forge.pki.oids.signedData) throw new Error('not a CMS SignedData');
  const signedData = children(children(info)[1] as Asn1)[0] as Asn1;
  const parts = children(signedData);
  const certSet = parts.find((p) => p.tagClass === C && p.type === 0);
  const certificates = (certSet ? children(certSet) : []).map((c) => new X509Certificate(der(c)));
  const signerInfos = parts[parts.length - 1] as Asn1;
  const signerInfo = children(signerInfos)[0];
  if (!signerInfo) throw new Error('no signer in the signature');
  const fields = children(signerInfo);
  const attrs = fields.find((f) => f.tagClass === C && f.type === 0);
  if (!attrs) throw new Error('the signature has no signed attributes');
  const sig = fields.find((f) => f.tagClass === U && f.type === forge.asn1.Type.OCTETSTRING);
  if (!sig) throw new Error('no signature value');
  return {
    certificates,
    signedAttrs: attrs,
    signature: Buffer.from(sig.value as string, 'binary'),
    digestOid: oidOf(children(fields[2] as Asn1)[0]),
  };
}

function attribute(attrs: Asn1, oid: string): Asn1 | undefined {
  const found = children(attrs).find((a) => oidOf(children(a)[0]) === oid);
  return found ? children(children(found)[1] as Asn1)[0] : undefined;
}

const EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';

/**
 * Why this certificate may not sign records, or null. Like openssl's S/MIME
 * signing purpose (pki.ts issues signers so): extended key usage must include
 * emailProtection and key usage digitalSignature or nonRepudiation, so that
 * e.g. the gateway's server certificate from the same CA is refused.
 */
export function signerUsageProblem(cert: X509Certificate): string | null {
  if (!(cert.keyUsage ?? []).includes(EMAIL_PROTECTION)) {
    return 'the signer certificate is not for signing (its extended key usage lacks emailProtection)';
  }
  let ku: { digitalSignature?: boolean; nonRepudiation?: boolean } | undefined;
  try {
    ku = forge.pki.certificateFromPem(cert.toString()).getExtension('keyUsage') as typeof ku;
  } catch {
    return 'the signer certificate cannot be read (RSA expected)';
  }
  if (!ku?.digitalSignature && !ku?.nonRepudiation) {
    return 'the signer certificate is not for signing (its key usage lacks digitalSignature and nonRepudiation)';
  }
  return null;
}

/**
 * The subject common name of the audit-seal certificate (issue 46): the one
 * key the Hospital API holds, to seal its audit log. The same CA issues it and
 * the acceptance record signer, both for CMS signing (emailProtection), so the
 * name is what tells them apart: a record signed by the audit-seal key is
 * refused, and a seal is accepted only from it. A name and not a private
 * extended key usage: the record signer may be the hospital's own certificate
 * under any name (install --signer-cert), and a hospital CA can put a name in
 * a certificate with any tool; forge cannot write an OID arc above 32 bits,
 * which rules out a 2.25 UUID OID.
 */
export const AUDIT_SEAL_COMMON_NAME = 'hospital-api audit seal';

/** What a signature is for: an acceptance record (records, `record verify`), or an audit-log seal. */
export type SignerRole = 'record' | 'audit-seal';

function commonNames(cert: X509Certificate): string[] {
  return cert.subject.split('\n').flatMap((rdn) => (rdn.startsWith('CN=') ? [rdn.slice(3)] : []));
}

/**
 * Why this certificate may not sign for `role`, or null: the audit-seal
 * certificate signs seals only, and only it signs seals, so the internet-facing
 * API's key can never sign an acceptance record.
 */
export function signerRoleProblem(cert: X509Certificate, role: SignerRole): string | null {
  const seal = commonNames(cert).includes(AUDIT_SEAL_COMMON_NAME);
  if (role === 'record' && seal) return `the signer is the audit-seal certificate (CN=${AUDIT_SEAL_COMMON_NAME}), which may not sign acceptance records`;
  if (role === 'audit-seal' && !seal) return `the signer is not the audit-seal certificate (its subject lacks CN=${AUDIT_SEAL_COMMON_NAME})`;
  return null;
}

/** Verifies `content` against the PEM signature, the signer against `caPem`, and that the signer may sign for `role`. */
export function verifyDetached(content: Uint8Array, signaturePem: string, caPem: string, role: SignerRole): SignatureCheck {
  const fail = (reason: string, signer: CertificateInfo | null = null, signingTime: string | null = null): SignatureCheck => ({
    ok: false,
    reason,
    signer,
    signingTime,
  });
  let p: Parsed;
  try {
    p = parse(signaturePem);
  } catch (err) {
    return fail(`unreadable signature: ${(err as Error).message}`);
  }
  if (p.digestOid !== forge.pki.oids.sha256) return fail('the digest algorithm is not SHA-256');
  const digestAttr = attribute(p.signedAttrs, forge.pki.oids.messageDigest as string);
  const timeAttr = attribute(p.signedAttrs, forge.pki.oids.signingTime as string);
  const signingTime = timeAttr ? forge.asn1.utcTimeToDate(timeAttr.value as string).toISOString() : null;
  // The signature covers the DER of the attributes with a SET tag (RFC 5652 §5.4).
  const setOf = forge.asn1.create(U, forge.asn1.Type.SET, true, children(p.signedAttrs));
  const signed = der(setOf);
  const ca = parsePemBundle(caPem, 'CA');
  const signer = p.certificates.find((c) => {
    const v = createVerify('sha256');
    v.update(signed);
    return v.verify(c.publicKey, p.signature);
  });
  if (!signer) return fail('the signature does not match the signed attributes (or no signer certificate)', null, signingTime);
  const info = describeCertificate(signer);
  const digest = createHash('sha256').update(content).digest();
  if (!digestAttr || !Buffer.from(digestAttr.value as string, 'binary').equals(digest)) {
    return fail('the record does not match its signature (it changed after signing)', info, signingTime);
  }
  if (!ca.some((c) => signer.checkIssued(c) && signer.verify(c.publicKey))) {
    return fail('the signer certificate is not issued by the given CA', info, signingTime);
  }
  const usage = signerUsageProblem(signer);
  if (usage) return fail(usage, info, signingTime);
  const wrongRole = signerRoleProblem(signer, role);
  if (wrongRole) return fail(wrongRole, info, signingTime);
  const at = signingTime ? Date.parse(signingTime) : Date.now();
  if (at < Date.parse(signer.validFrom) || at > Date.parse(signer.validTo)) {
    return fail('the signer certificate was not valid at signing time', info, signingTime);
  }
  return { ok: true, reason: null, signer: info, signingTime };
}
