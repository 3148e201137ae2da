/**
 * CMS/PKCS#7 SignedData (PEM) over exact bytes, with node-forge: SHA-256,
 * signed attributes content-type, message-digest and signing-time, signer
 * certificate embedded. `openssl cms -verify -binary` checks the result against
 * the hospital CA. The one CMS signer of the toolkit: acceptance records are
 * signed detached (issue 5), audit-log seals with their statement attached
 * (issue 46), so `openssl cms -verify` prints what a seal covers.
 */
import forge from 'node-forge';

export function signDetached(content: Uint8Array, certPem: string, keyPem: string, signingTime = new Date()): string {
  return signCms(content, certPem, keyPem, { detached: true, signingTime });
}

/** The same signature with the content inside it (`openssl cms -verify` prints it back). */
export function signAttached(content: Uint8Array, certPem: string, keyPem: string, signingTime = new Date()): string {
  return signCms(content, certPem, keyPem, { detached: false, signingTime });
}

function signCms(content: Uint8Array, certPem: string, keyPem: string, options: { detached: boolean; signingTime: Date }): string {
  const { signingTime } = options;
  const p7 = forge.pkcs7.createSignedData();
  p7.content = forge.util.createBuffer(Buffer.from(content).toString('binary'));
  const certificate = forge.pki.certificateFromPem(certPem);
  p7.addCertificate(certificate);
  p7.addSigner({
    key: forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey,
    certificate,
    digestAlgorithm: forge.pki.oids.sha256 as string,
    authenticatedAttributes: [
      { type: forge.pki.oids.contentType as string, value: forge.pki.oids.data as string },
      { type: forge.pki.oids.messageDigest as string },
      // forge's typings want a string; it encodes a Date as UTCTime
      { type: forge.pki.oids.signingTime as string, value: signingTime as unknown as string },
    ],
  });
  p7.sign({ detached: options.detached });
  return forge.pkcs7.messageToPem(p7);
}
