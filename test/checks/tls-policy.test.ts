/**
 * The tls-policy check against the real gateway TLS listener (the proxy's
 * listeners.ts on 127.0.0.1, a real certificate from a real CA): it passes on
 * Kong's default intermediate suite and names what was negotiated, and fails,
 * naming why, when the listener admits plain RSA (custom ssl_ciphers) or
 * TLS 1.1 (ssl_cipher_suite old), when it refuses TLS 1.2 (modern), or when
 * nothing answers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { tlsPolicy } from '../../src/checks/tls-policy.js';
import type { CheckContext } from '../../src/checks/types.js';
import { tlsPolicyOf, type KongTlsSettings } from '../../src/gateway/proxy/tls-settings.js';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { freePort } from '../../src/util/port-check.js';
import { Snapshots, startProxyOn, type RunningProxy } from '../gateway/proxy/harness.js';

const ca = generateCa({ commonName: 'tls-policy check CA' });
const cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
const running: RunningProxy[] = [];

async function gateway(settings: KongTlsSettings, pair = cert): Promise<number> {
  const gw = await startProxyOn(new Snapshots(), { http: false, https: { cert: pair.certPem, key: pair.keyPem }, tlsPolicy: tlsPolicyOf(settings) });
  running.push(gw);
  return gw.listeners.https!.port;
}

function ctx(port: number): CheckContext {
  return { config: { hosts: ['127.0.0.1'], ports: { gatewayHttps: port } }, caPem: ca.certPem, caPath: 'ca.pem' } as unknown as CheckContext;
}

afterAll(async () => {
  await Promise.all(running.map((g) => g.close()));
});

describe('tls-policy', () => {
  it("passes on Kong's default (intermediate), naming the TLS 1.3 and TLS 1.2 suites negotiated", async () => {
    const r = await tlsPolicy.run(ctx(await gateway({})));
    expect(r.status).toBe('pass');
    expect(r.summary).toMatch(/^TLSv1\.3 TLS_AES_\d+_GCM_SHA\d+; TLS 1\.2: TLSv1\.2 ECDHE-RSA-AES128-GCM-SHA256; plain RSA and TLS 1\.1 refused$/);
    expect(r.detail).toContain('TLS 1.1 client: refused');
    expect(r.detail).toContain('only plain-RSA suites');
  });

  it('fails when the listener admits a plain-RSA suite (custom ssl_ciphers), naming the suite', async () => {
    const r = await tlsPolicy.run(ctx(await gateway({ sslCipherSuite: 'custom', sslCiphers: 'ECDHE-RSA-AES128-GCM-SHA256:AES256-GCM-SHA384' })));
    expect(r.status).toBe('fail');
    expect(r.summary).toBe('a plain-RSA suite was accepted (AES256-GCM-SHA384)');
    expect(r.hint).toContain('ssl_cipher_suite = intermediate');
  });

  it('fails on a TLS 1.2 listener that prefers a plain-RSA suite for every client (custom, server order)', async () => {
    const r = await tlsPolicy.run(ctx(await gateway({ sslCipherSuite: 'custom', sslCiphers: 'AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256', sslProtocols: 'TLSv1.2', sslPreferServerCiphers: 'on' })));
    expect(r.status).toBe('fail');
    expect(r.summary).toContain('TLSv1.2 AES128-GCM-SHA256 is not forward-secret');
  });

  it("fails when TLS 1.1 is accepted (Kong's old suite), and on modern (TLS 1.2 clients refused)", async () => {
    const old = await tlsPolicy.run(ctx(await gateway({ sslCipherSuite: 'old' })));
    expect(old.status).toBe('fail');
    expect(old.summary).toContain('TLS 1.1 was accepted');
    expect(old.summary).toContain('a plain-RSA suite was accepted');
    const modern = await tlsPolicy.run(ctx(await gateway({ sslCipherSuite: 'modern' })));
    expect(modern.status).toBe('fail');
    expect(modern.summary).toBe('a TLS 1.2 client was refused');
  });

  it('a certificate that does not verify: weak offers still judged (accepted = completed handshake), the suite left unnamed', async () => {
    const other = issueCertificate(generateCa({ commonName: 'other CA' }), { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    const good = await tlsPolicy.run(ctx(await gateway({}, other)));
    expect(good.status).toBe('skip');
    expect(good.summary).toMatch(/certificate-chain/);
    const weak = await tlsPolicy.run(ctx(await gateway({ sslCipherSuite: 'custom', sslCiphers: 'ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256' }, other)));
    expect(weak.status).toBe('fail');
    expect(weak.summary).toBe('a plain-RSA suite was accepted');
  });

  it('fails when nothing answers on the port', async () => {
    const r = await tlsPolicy.run(ctx(await freePort()));
    expect(r.status).toBe('fail');
    expect(r.summary).toBe('the gateway does not answer TLS');
    expect(r.detail).toMatch(/ECONNREFUSED/);
  });
});
