/**
 * What one verify run reads once, for every check that asks (issue 44): the gateway's objects
 * through the admin API, and the certificate the gateway presents. Read on the first ask, so no
 * check depends on another having run first; a failed read is not kept, so the next check that
 * asks tries again and reports its own error. Checks read facts and return findings; nothing here
 * is written by a check.
 */
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import type { InstallConfig } from '../install-dir/install-config.js';
import type { Runtime } from '../runtime/types.js';
import { describeCertificate, type CertificateInfo } from '../tls/inspect.js';
import { readGatewaySnapshot, type GatewaySnapshot } from './gateway-snapshot.js';

export interface GatewayCertificate {
  x509: X509Certificate;
  info: CertificateInfo;
}

export interface RunFacts {
  /** Every service, route, upstream, target, plugin and consumer of the gateway. */
  gatewaySnapshot(): Promise<GatewaySnapshot>;
  /** The certificate the gateway's HTTPS port presents, verified against the CA and the host by the handshake. */
  gatewayCertificate(): Promise<GatewayCertificate>;
}

/** The gateway's certificate, from a TLS handshake that verifies the chain against `ca` and the host name. */
function handshake(host: string, port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    // rejectUnauthorized stated, not defaulted: the default follows the environment.
    const socket = connect({ host, port, ca, rejectUnauthorized: true, ...(isIP(host) ? {} : { servername: host }) });
    socket.setTimeout(10_000, () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('secureConnect', () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.once('error', reject);
  });
}

/** `read` once; a rejection is dropped so that the next ask reads again. */
function once<T>(read: () => Promise<T>): () => Promise<T> {
  let kept: Promise<T> | null = null;
  return () => {
    if (!kept) {
      const p = read();
      kept = p;
      p.catch(() => {
        if (kept === p) kept = null;
      });
    }
    return kept;
  };
}

export function createRunFacts(ctx: { config: InstallConfig; caPem: string; runtime: Pick<Runtime, 'admin'> }): RunFacts {
  return {
    gatewaySnapshot: once(() => readGatewaySnapshot(ctx.runtime)),
    gatewayCertificate: once(async () => {
      const x509 = await handshake(ctx.config.hosts[0] ?? 'localhost', ctx.config.ports.gatewayHttps, ctx.caPem);
      return { x509, info: describeCertificate(x509) };
    }),
  };
}
