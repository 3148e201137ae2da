/**
 * Issue 23/26: the TLS proxy listener offers what Kong's default
 * `ssl_cipher_suite = intermediate` offers (Mozilla intermediate 5.7): TLS 1.2
 * and 1.3 only, forward-secret AEAD suites only, the client's preference
 * standing; and Kong's other suites and custom settings as Kong maps them.
 * Real handshakes from node:tls clients against the real listener.
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:tls';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { tlsPolicyOf } from '../../../src/gateway/proxy/tls-settings.js';
import { MOZILLA_INTERMEDIATE_TLS12_CIPHERS } from '../../../src/tls/cipher-policy.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { emptyConfig, Snapshots, startProxyOn, type RunningProxy } from './harness.js';

const ca = generateCa({ commonName: 'TLS policy test CA' });
const server = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1', 'localhost'], usage: 'server' });
const caFile = join(tempDir('tls-policy-ca-'), 'ca.pem');
writeFileSync(caFile, ca.certPem);
const PLAIN_RSA = 'AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA256:AES128-SHA';

type Outcome = { ok: true; protocol: string; cipher: string; cn: string } | { ok: false; code: string };

/** One handshake, the certificate verified against the test CA. */
function handshake(port: number, offer: { minVersion?: 'TLSv1.1' | 'TLSv1.2'; maxVersion?: 'TLSv1.1' | 'TLSv1.2'; ciphers?: string; servername?: string } = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const s = connect({ rejectUnauthorized: true, host: '127.0.0.1', port, ca: ca.certPem, ...offer });
    s.once('secureConnect', () => {
      resolve({ ok: true, protocol: String(s.getProtocol()), cipher: s.getCipher().name, cn: String(s.getPeerCertificate().subject.CN) });
      s.end();
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, code: String(err.code) }));
  });
}

const TLS11 = { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' } as const;

const running: RunningProxy[] = [];
async function listener(policy?: ReturnType<typeof tlsPolicyOf>, https: KeyAndCert = server, configure?: (s: Snapshots) => void): Promise<RunningProxy> {
  const snapshots = new Snapshots();
  configure?.(snapshots);
  const gw = await startProxyOn(snapshots, { http: false, https: { cert: https.certPem, key: https.keyPem }, ...(policy ? { tlsPolicy: policy } : {}) });
  running.push(gw);
  return gw;
}

afterAll(async () => {
  await Promise.all(running.map((g) => g.close()));
  removeTempDirs();
});

describe('the TLS proxy listener by default: Mozilla intermediate, as Kong ships it', () => {
  it('refuses a TLS 1.2 client that offers only plain-RSA key exchange suites, and a TLS 1.1 client', async () => {
    const port = (await listener()).listeners.https!.port;
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toEqual({ ok: false, code: 'ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE' });
    expect(await handshake(port, TLS11)).toEqual({ ok: false, code: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    // CBC suites with ECDHE are forward-secret but not in the profile
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA' })).toMatchObject({ ok: false });
  });

  it('negotiates TLS 1.3 by default, and each RSA-authenticated suite of the profile over TLS 1.2 (DHE included)', async () => {
    const port = (await listener()).listeners.https!.port;
    expect(await handshake(port)).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
    // the server certificate is RSA: the ECDSA suites of the list cannot be served by it
    for (const cipher of MOZILLA_INTERMEDIATE_TLS12_CIPHERS.filter((c) => !c.includes('ECDSA'))) {
      expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: cipher }), cipher).toMatchObject({ ok: true, protocol: 'TLSv1.2', cipher });
    }
  });

  it('offers the DHE suites with RFC 7919 ffdhe2048, as Kong does, not OpenSSL\'s built-in RFC 3526 group 14 (issue 48)', async () => {
    const port = (await listener()).listeners.https!.port;
    // openssl s_client -msg dumps the ServerKeyExchange, whose first parameter is the group's prime p
    const r = await execa('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-tls1_2', '-cipher', 'DHE-RSA-AES128-GCM-SHA256', '-msg', '-CAfile', caFile], { reject: false, input: '' });
    expect(r.stdout).toMatch(/Cipher is DHE-RSA-AES128-GCM-SHA256/);
    const bytes = r.stdout.split('\n').join(' ').replace(/\s+/g, ' ');
    // RFC 7919 A.1: p = FFFFFFFF FFFFFFFF ADF85458 A2BB4A9A …; RFC 3526 group 14: p = FFFFFFFF FFFFFFFF C90FDAA2 2168C234 …
    expect(bytes).toContain('ff ff ff ff ff ff ff ff ad f8 54 58 a2 bb 4a 9a');
    expect(bytes).not.toContain('ff ff ff ff ff ff ff ff c9 0f da a2 21 68 c2 34');
  });

  it("lets the client's preference stand (ssl_prefer_server_ciphers off): the client's first shared suite is used", async () => {
    const port = (await listener()).listeners.https!.port;
    // in the server's list AES128-GCM comes first; a server-order listener would pick it
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256' })).toMatchObject({ cipher: 'ECDHE-RSA-CHACHA20-POLY1305' });
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305' })).toMatchObject({ cipher: 'ECDHE-RSA-AES128-GCM-SHA256' });
  });

  it('keeps the policy after a certificate reload (cert renew, SIGHUP): setSecureContext alone would fall back to Node\'s defaults', async () => {
    const gw = await listener();
    const renewed = issueCertificate(ca, { commonName: 'renewed', hosts: ['127.0.0.1'], usage: 'server' });
    gw.listeners.setTls({ cert: renewed.certPem, key: renewed.keyPem });
    const port = gw.listeners.https!.port;
    expect(await handshake(port)).toMatchObject({ ok: true, cn: 'renewed' });
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: false });
    expect(await handshake(port, TLS11)).toMatchObject({ ok: false });
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256' })).toMatchObject({ cipher: 'ECDHE-RSA-CHACHA20-POLY1305' });
  });

  it("keeps the policy when an SNI entity's certificate is served", async () => {
    const sni = issueCertificate(ca, { commonName: 'fhir.hospital.example', hosts: ['fhir.hospital.example'], usage: 'server' });
    const gw = await listener(undefined, server, (s) => {
      const c = emptyConfig();
      const id = randomUUID();
      Object.assign(c, { certificates: [{ id, cert: sni.certPem, key: sni.keyPem, tags: null }], snis: [{ id: randomUUID(), name: 'fhir.hospital.example', certificate: { id } }] });
      s.set(c);
    });
    const port = gw.listeners.https!.port;
    expect(await handshake(port, { servername: 'fhir.hospital.example' })).toMatchObject({ ok: true, cn: 'fhir.hospital.example' });
    expect(await handshake(port, { servername: 'fhir.hospital.example', maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: false });
    expect(await handshake(port, { servername: 'fhir.hospital.example', ...TLS11 })).toMatchObject({ ok: false });
  });
});

describe("Kong's ssl_cipher_suite, ssl_ciphers, ssl_protocols (kong/conf_loader)", () => {
  it('custom takes ssl_ciphers as given: a list that admits plain RSA is served (the weakness tls-policy catches)', async () => {
    const port = (await listener(tlsPolicyOf({ sslCipherSuite: 'custom', sslCiphers: 'ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256' }))).listeners.https!.port;
    expect(await handshake(port, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: true, cipher: 'AES128-GCM-SHA256' });
    // TLS 1.3 stays (nginx's ssl_ciphers is the TLS 1.2 list), TLS 1.1 is off (ssl_protocols default)
    expect(await handshake(port)).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
    expect(await handshake(port, TLS11)).toMatchObject({ ok: false });
  });

  it('old admits TLS 1.1 and plain RSA; modern refuses TLS 1.2', async () => {
    const old = (await listener(tlsPolicyOf({ sslCipherSuite: 'old' }))).listeners.https!.port;
    expect(await handshake(old, TLS11)).toMatchObject({ ok: true, protocol: 'TLSv1.1' });
    expect(await handshake(old, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: true });
    const modern = (await listener(tlsPolicyOf({ sslCipherSuite: 'modern' }))).listeners.https!.port;
    expect(await handshake(modern)).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
    expect(await handshake(modern, { maxVersion: 'TLSv1.2' })).toMatchObject({ ok: false });
  });

  it('for any suite but custom the suite decides, as in Kong: ssl_ciphers and ssl_protocols are ignored', () => {
    expect(tlsPolicyOf({ sslCipherSuite: 'intermediate', sslCiphers: 'AES128-SHA', sslProtocols: 'TLSv1' })).toEqual(tlsPolicyOf({}));
    expect(tlsPolicyOf({})).toMatchObject({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.3', honorCipherOrder: false });
  });

  it('refuses what Kong refuses, with ERR_USAGE and the setting named', () => {
    const err = (s: Parameters<typeof tlsPolicyOf>[0]) => {
      try {
        tlsPolicyOf(s);
      } catch (e) {
        return `${(e as { code: string }).code} ${(e as Error).message}`;
      }
      return 'no error';
    };
    expect(err({ sslCipherSuite: 'strong' })).toMatch(/^ERR_USAGE .*Undefined cipher suite strong/);
    expect(err({ sslCipherSuite: 'custom' })).toMatch(/^ERR_USAGE .*needs ssl_ciphers/);
    expect(err({ sslCipherSuite: 'custom', sslCiphers: 'AES128-SHA', sslProtocols: 'TLSv1 TLSv1.3' })).toMatch(/^ERR_USAGE .*gap/);
    expect(err({ sslCipherSuite: 'custom', sslCiphers: 'AES128-SHA', sslProtocols: 'SSLv3' })).toMatch(/^ERR_USAGE .*ssl_protocols/);
    expect(err({ sslCipherSuite: 'custom', sslCiphers: 'AES128-SHA', sslPreferServerCiphers: 'yes' })).toMatch(/^ERR_USAGE .*on or off/);
  });
});

describe('hospital-api gateway reads them as Kong does: KONG_SSL_* variables, or flags', () => {
  async function ready(env: Record<string, string>, extra: string[] = []): Promise<{ port: number; stop: () => Promise<void> }> {
    const dir = tempDir();
    const cert = `${dir}/gw.pem`;
    const key = `${dir}/gw.key`;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(cert, server.certPem);
    writeFileSync(key, server.keyPem, { mode: 0o600 });
    const child = startCli(['gateway', '--admin-listen', 'off', '--proxy-listen', 'off', '--proxy-ssl-listen', '127.0.0.1:0', '--cert', cert, '--key', key, '--state', `${dir}/state.json`, ...extra], { env });
    let err = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /proxy-ssl=\S+:(\d+)/.exec(err);
        if (m) resolve(Number(m[1]));
      });
      void child.then((r) => reject(new Error(`exited ${r.exitCode}: ${err}`)), reject);
    });
    return {
      port,
      stop: async () => {
        child.kill('SIGTERM');
        await child.catch(() => undefined);
      },
    };
  }

  it('KONG_SSL_CIPHER_SUITE=custom with KONG_SSL_CIPHERS admitting plain RSA is honoured; --ssl-cipher-suite intermediate overrides it', async () => {
    const env = { KONG_SSL_CIPHER_SUITE: 'custom', KONG_SSL_CIPHERS: 'ECDHE-RSA-AES128-GCM-SHA256:AES128-GCM-SHA256' };
    const weak = await ready(env);
    try {
      expect(await handshake(weak.port, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: true, cipher: 'AES128-GCM-SHA256' });
    } finally {
      await weak.stop();
    }
    const fixed = await ready(env, ['--ssl-cipher-suite', 'intermediate']);
    try {
      expect(await handshake(fixed.port, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA })).toMatchObject({ ok: false });
    } finally {
      await fixed.stop();
    }
  }, 60_000);

  it('an undefined suite or an ssl_ciphers list OpenSSL matches nothing of is a usage error (exit 2), nothing listens', async () => {
    const bad = await runCli(['gateway', '--admin-listen', 'off', '--proxy-listen', 'off', '--state', `${tempDir()}/s.json`, '--ssl-cipher-suite', 'strong']);
    expect(bad.exitCode).toBe(2);
    expect(String(bad.stderr)).toContain('Undefined cipher suite strong');
    const dir = tempDir();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(`${dir}/c.pem`, server.certPem);
    writeFileSync(`${dir}/k.pem`, server.keyPem, { mode: 0o600 });
    const nomatch = await runCli(['gateway', '--admin-listen', 'off', '--proxy-listen', 'off', '--proxy-ssl-listen', '127.0.0.1:0', '--cert', `${dir}/c.pem`, '--key', `${dir}/k.pem`, '--state', `${dir}/s.json`], {
      env: { KONG_SSL_CIPHER_SUITE: 'custom', KONG_SSL_CIPHERS: 'NOT-A-CIPHER' },
    });
    expect(nomatch.exitCode).toBe(2);
    expect(String(nomatch.stderr)).toMatch(/ssl_ciphers: .*no cipher match/i);
  }, 60_000);
});
