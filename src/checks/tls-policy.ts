/**
 * Negative check (issue 23): the gateway's HTTPS port negotiates what Mozilla's
 * intermediate profile allows (src/tls/cipher-policy.ts), judged by what it
 * actually does with real handshakes, not by its settings:
 *  - a TLS 1.2 client offering only plain-RSA key exchange suites is refused
 *    (no forward secrecy: a stolen server key would decrypt recorded traffic);
 *  - a TLS 1.1 client is refused;
 *  - a default client, and a TLS 1.2 one, each get a forward-secret suite.
 * The record names the protocol and suite of each successful handshake.
 *
 * A handshake that ends in a certificate error still completed at the TLS
 * layer (node:tls verifies the chain after it), so for the refusal probes it
 * counts as accepted; the certificate itself is certificate-chain's business.
 */
import { isIP } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { isForwardSecret } from '../tls/cipher-policy.js';
import { describeFailure, isTlsFailure } from './http.js';
import type { Check, CheckOutcome } from './types.js';

/** TLS 1.2 suites with plain RSA key exchange (RFC 5246, RFC 5288 names; OpenSSL spelling). */
export const PLAIN_RSA_PROBE = 'AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA256:AES256-SHA256:AES128-SHA:AES256-SHA';

type Handshake =
  | { kind: 'ok'; protocol: string; cipher: string; forwardSecret: boolean }
  | { kind: 'cert'; detail: string }
  | { kind: 'refused'; detail: string }
  | { kind: 'down'; detail: string };

interface Offer {
  minVersion?: 'TLSv1.1' | 'TLSv1.2';
  maxVersion?: 'TLSv1.1' | 'TLSv1.2';
  ciphers?: string;
}

function handshake(host: string, port: number, ca: string, offer: Offer): Promise<Handshake> {
  return new Promise((resolve) => {
    // rejectUnauthorized stated, not defaulted: the default follows the environment.
    const socket: TLSSocket = connect({ rejectUnauthorized: true, host, port, ca, ...offer, ...(isIP(host) ? {} : { servername: host }) });
    let settled = false;
    const done = (h: Handshake): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(h);
    };
    socket.setTimeout(10_000, () => done({ kind: 'down', detail: 'TLS handshake timed out' }));
    socket.once('secureConnect', () => {
      const c = socket.getCipher();
      const protocol = socket.getProtocol() ?? c.version;
      done({ kind: 'ok', protocol, cipher: c.name, forwardSecret: isForwardSecret({ name: c.name, version: protocol }) });
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const detail = describeFailure(err);
      if (/^ERR_SSL_|SSL routines|alert/i.test(`${err.code ?? ''} ${err.message}`) && !/CERT/.test(err.code ?? '')) done({ kind: 'refused', detail });
      else if (isTlsFailure(err)) done({ kind: 'cert', detail });
      else done({ kind: 'down', detail });
    });
  });
}

function named(h: Handshake): string {
  return h.kind === 'ok' ? `${h.protocol} ${h.cipher}` : h.kind === 'cert' ? 'completed (the certificate did not verify)' : h.kind === 'refused' ? `refused (${h.detail.split('\n')[0]})` : `no answer (${h.detail})`;
}

export const tlsPolicy: Check = {
  id: 'tls-policy',
  spec: 'extra',
  title: "The gateway negotiates Mozilla's intermediate TLS profile: TLS 1.2+ and forward-secret suites only",
  mandatory: true,
  async run(ctx): Promise<CheckOutcome> {
    const host = ctx.config.hosts[0] ?? 'localhost';
    const port = ctx.config.ports.gatewayHttps;
    const at = `${host}:${port}`;
    const normal = await handshake(host, port, ctx.caPem, {});
    if (normal.kind === 'down' || normal.kind === 'refused') {
      return { status: 'fail', summary: 'the gateway does not answer TLS', detail: `${at}: ${named(normal)}`, hint: 'Is the gateway running?' };
    }
    const tls12 = await handshake(host, port, ctx.caPem, { maxVersion: 'TLSv1.2' });
    const plainRsa = await handshake(host, port, ctx.caPem, { maxVersion: 'TLSv1.2', ciphers: PLAIN_RSA_PROBE });
    // OpenSSL 3 clients offer TLS 1.1 only at security level 0 (its signatures are SHA-1/MD5)
    const tls11 = await handshake(host, port, ctx.caPem, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' });
    const detail = [
      `${at}`,
      `default client: ${named(normal)}`,
      `TLS 1.2 client: ${named(tls12)}`,
      `TLS 1.2 client offering only plain-RSA suites (${PLAIN_RSA_PROBE}): ${named(plainRsa)}`,
      `TLS 1.1 client: ${named(tls11)}`,
    ].join('; ');
    const problems: string[] = [];
    if (plainRsa.kind === 'ok' || plainRsa.kind === 'cert') problems.push(`a plain-RSA suite was accepted${plainRsa.kind === 'ok' ? ` (${plainRsa.cipher})` : ''}`);
    if (tls11.kind === 'ok' || tls11.kind === 'cert') problems.push('TLS 1.1 was accepted');
    for (const h of [normal, tls12]) {
      if (h.kind === 'ok' && !h.forwardSecret) problems.push(`${h.protocol} ${h.cipher} is not forward-secret`);
      if (h.kind === 'ok' && !['TLSv1.2', 'TLSv1.3'].includes(h.protocol)) problems.push(`${h.protocol} negotiated`);
    }
    if (tls12.kind === 'refused' || tls12.kind === 'down') problems.push(`a TLS 1.2 client was refused`);
    if (problems.length) {
      return {
        status: 'fail',
        summary: problems.join('; '),
        detail,
        hint: "Use Kong's default ssl_cipher_suite = intermediate (KONG_SSL_CIPHER_SUITE; native: unset it or --ssl-cipher-suite intermediate), then restart the gateway.",
      };
    }
    if (normal.kind === 'cert' || tls12.kind === 'cert') {
      // refusals proven, but what was negotiated cannot be named: certificate-chain fails this install
      return { status: 'skip', summary: 'weak offers refused; the negotiated suite is not named (the certificate does not verify, see certificate-chain)', detail };
    }
    return { status: 'pass', summary: `${named(normal)}; TLS 1.2: ${named(tls12)}; plain RSA and TLS 1.1 refused`, detail };
  },
};
