import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'undici';
import { generateCa, issueCertificate, SERVER_CERT_MAX_DAYS } from '../../src/tls/pki.js';
import { describeCertificate } from '../../src/tls/inspect.js';

describe('pki', () => {
  const ca = generateCa({ commonName: 'Unit CA' });
  const server = issueCertificate(ca, { commonName: 'gw.test', hosts: ['127.0.0.1', 'gw.test'], usage: 'server' });
  const https = createServer({ key: server.keyPem, cert: server.certPem }, (_req, res) => res.end('ok'));
  afterAll(() => new Promise<void>((r) => https.close(() => r())));

  it('issues a server certificate that chains to the CA and names its hosts', () => {
    const cert = new X509Certificate(server.certPem);
    const caCert = new X509Certificate(ca.certPem);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('gw.test')).toBe('gw.test');
    expect(cert.checkHost('other.test')).toBeUndefined();
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(describeCertificate(cert).subject).toBe('CN=gw.test');
  });

  it("a server certificate lives at most 365 days from its backdated start (within Mozilla's 366); longer is refused; a signer keeps 825", () => {
    const span = (pem: string) => {
      const c = new X509Certificate(pem);
      return (Date.parse(c.validTo) - Date.parse(c.validFrom)) / 86_400_000;
    };
    const lived = span(server.certPem);
    expect(lived).toBeGreaterThan(365);
    expect(lived).toBeLessThanOrEqual(366);
    expect(SERVER_CERT_MAX_DAYS).toBe(365);
    expect(() => issueCertificate(ca, { commonName: 'gw.test', usage: 'server', days: 366 })).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_BAD_OPTION' }));
    expect(Math.round(span(issueCertificate(ca, { commonName: 'signer', usage: 'signing' }).certPem))).toBe(825);
  });

  it('is accepted by undici with the CA and rejected without it', async () => {
    await new Promise<void>((r) => https.listen(0, '127.0.0.1', () => r()));
    const url = `https://127.0.0.1:${(https.address() as AddressInfo).port}/`;
    const good = await request(url, { dispatcher: new Agent({ connect: { ca: ca.certPem } }) });
    expect(good.statusCode).toBe(200);
    expect(await good.body.text()).toBe('ok');
    const other = generateCa({ commonName: 'Other CA' });
    await expect(request(url, { dispatcher: new Agent({ connect: { ca: other.certPem } }) })).rejects.toMatchObject({
      code: expect.stringMatching(/UNABLE_TO_VERIFY|SELF_SIGNED|CERT/),
    });
  });
});
