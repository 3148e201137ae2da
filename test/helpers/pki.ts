/**
 * A real PKI made in the test: a CA, a server certificate for 127.0.0.1 and
 * localhost, and a second, unrelated CA to prove rejections.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCa, issueCertificate, type KeyAndCert } from '../../src/tls/pki.js';

export interface TestPki {
  ca: KeyAndCert;
  server: KeyAndCert;
  otherCa: KeyAndCert;
  /** Paths of the same material written to `dir`. */
  files: { ca: string; cert: string; key: string; otherCa: string };
}

export function makeTestPki(dir: string, hosts: string[] = ['127.0.0.1', 'localhost']): TestPki {
  const ca = generateCa({ commonName: 'Test Hospital CA' });
  const server = issueCertificate(ca, { commonName: hosts[0] ?? 'localhost', hosts, usage: 'server' });
  const otherCa = generateCa({ commonName: 'Unrelated CA' });
  const files = {
    ca: join(dir, 'ca.pem'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server.key'),
    otherCa: join(dir, 'other-ca.pem'),
  };
  writeFileSync(files.ca, ca.certPem);
  writeFileSync(files.cert, server.certPem);
  writeFileSync(files.key, server.keyPem, { mode: 0o600 });
  writeFileSync(files.otherCa, otherCa.certPem);
  return { ca, server, otherCa, files };
}
