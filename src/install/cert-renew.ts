/**
 * `cert renew` (issue 15): new gateway and record-signing certificates from
 * the hospital CA (or the hospital's own), installed without downtime: the
 * files are replaced atomically, the running gateway reloads them by signal
 * for new TLS connections while open ones carry on, and the renewal only
 * counts once a new TLS handshake (verified against the CA, for the install's
 * host name) presents the new certificate. If it does not, the old files go
 * back and the gateway reloads them.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { HospitalApiError } from '../errors/index.js';
import { readInstallConfig } from '../runtime/install-config.js';
import { installPaths, type InstallPaths } from '../runtime/layout.js';
import { dayTwo } from '../runtime/not-supported.js';
import type { Runtime } from '../runtime/types.js';
import { writeFileAtomic, writeSecretFile } from '../util/atomic-write.js';
import { certificateLifetimes, prepareRenewal, type CertificateLifetime, type RenewChoice } from './tls.js';

const PICKUP_TIMEOUT_MS = 15_000;

export interface RenewResult {
  how: 'reissued' | 'provided';
  certificates: CertificateLifetime[];
  /** True when the running gateway was seen presenting the new certificate; null when it was not running. */
  gatewayReloaded: boolean | null;
}

/** The certificate a fresh TLS handshake gets from the gateway, verified against the CA for `host`. */
export async function presentedFingerprint(caPem: string, port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: caPem, rejectUnauthorized: true, ...(isIP(host) ? {} : { servername: host }), checkServerIdentity: (_h, cert) => {
      const x = new X509Certificate(cert.raw);
      const ok = isIP(host) ? x.checkIP(host) : x.checkHost(host);
      return ok ? undefined : new Error(`the gateway certificate does not name ${host}`);
    } });
    socket.setTimeout(5_000, () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('secureConnect', () => {
      const fp = socket.getPeerX509Certificate()?.fingerprint256 ?? '';
      socket.end();
      resolve(fp);
    });
    socket.once('error', reject);
  });
}

type Files = Array<[string, string | null, boolean]>;

function snapshot(paths: InstallPaths): Files {
  const read = (p: string): string | null => (existsSync(p) ? readFileSync(p, 'utf8') : null);
  return [
    [paths.gatewayKey, read(paths.gatewayKey), true],
    [paths.gatewayCert, read(paths.gatewayCert), false],
    [paths.signerKey, read(paths.signerKey), true],
    [paths.signerCert, read(paths.signerCert), false],
  ];
}

function writeAll(files: Files): void {
  for (const [path, text, secret] of files) {
    if (text === null) continue;
    if (secret) writeSecretFile(path, text);
    else writeFileAtomic(path, text);
  }
}

export async function renewCertificates(runtime: Runtime, dir: string, choice: RenewChoice, log: (text: string) => void): Promise<RenewResult> {
  const paths = installPaths(dir);
  const config = readInstallConfig(dir);
  // Everything is decided and checked before a file changes.
  const renewed = prepareRenewal(paths, config.hosts, choice);
  const before = snapshot(paths);
  const next: Files = [
    [paths.gatewayKey, renewed.gateway.keyPem, true],
    [paths.gatewayCert, renewed.gateway.certPem, false],
    [paths.signerKey, renewed.signer?.keyPem ?? null, true],
    [paths.signerCert, renewed.signer?.certPem ?? null, false],
  ];
  const gatewayUp = (await runtime.components()).some((c) => c.name === (runtime.name === 'docker' ? 'kong' : 'gateway') && (c.state === 'up' || c.state === 'degraded'));
  try {
    writeAll(next);
  } catch (err) {
    writeAll(before);
    throw err;
  }
  log(`${renewed.how === 'reissued' ? 'Re-issued' : 'Installed the provided'} gateway certificate${renewed.signer ? ' and record-signing certificate' : ''} in ${paths.tls}`);
  let gatewayReloaded: boolean | null = null;
  if (gatewayUp) {
    const want = new X509Certificate(renewed.gateway.certPem).fingerprint256;
    const caPem = readFileSync(paths.caCert, 'utf8');
    const host = config.hosts[0] ?? 'localhost';
    await dayTwo(runtime).reloadGatewayTls();
    const deadline = Date.now() + PICKUP_TIMEOUT_MS;
    let seen = '';
    let lastError = '';
    while (Date.now() < deadline) {
      try {
        seen = await presentedFingerprint(caPem, config.ports.gatewayHttps, host);
        if (seen === want) break;
      } catch (err) {
        lastError = (err as Error).message;
      }
      await sleep(100);
    }
    if (seen !== want) {
      writeAll(before);
      await dayTwo(runtime).reloadGatewayTls().catch(() => undefined);
      log(`the gateway did not take the new certificate${lastError ? ` (${lastError})` : ''}; the previous files are back`);
      throw new HospitalApiError('ERR_CERT_NOT_PICKED_UP', { seconds: PICKUP_TIMEOUT_MS / 1000 });
    }
    gatewayReloaded = true;
    log('the gateway presents the new certificate to new connections (verified against the CA); open connections were kept');
  } else {
    log('the gateway is not running: it loads the new certificate when it starts');
  }
  return { how: renewed.how, certificates: certificateLifetimes(paths), gatewayReloaded };
}
