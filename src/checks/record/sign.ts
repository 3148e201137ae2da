/**
 * Detached CMS/PKCS#7 signatures (PEM) over a record's exact bytes, with
 * node-forge: SHA-256, signed attributes content-type, message-digest and
 * signing-time, signer certificate embedded. `openssl cms -verify -binary`
 * checks the result against the hospital CA (issue 5).
 */
import forge from 'node-forge';

export function signDetached(content: Uint8Array, certPem: string, keyPem: string, signingTime = new Date()): string {
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
  p7.sign({ detached: true });
  return forge.pkcs7.messageToPem(p7);
}
