/**
 * `cert renew` (issue 15): new gateway and record-signing certificates from
 * the hospital CA (or the hospital's own), installed without downtime: the
 * files are replaced atomically, the running gateway reloads them by signal
 * for new TLS connections while open ones carry on, and the renewal only
 * counts once a new TLS handshake (verified against the CA, for the install's
 * host name) presents the new certificate. If it does not, the old files go
 * back and the gateway reloads them.
 *
 * A new CA (`--renew-ca` for an install that generated its CA, or the
 * hospital's new CA with `--ca-cert`/`--ca-key`), when the CA nears expiry or
 * the hospital changes PKI: tls/ca.pem becomes a bundle, the new CA first and
 * the previous ones after it (so acceptance records signed before still
 * verify, and the gateway's current certificate stays trusted meanwhile); the
 * running Hospital API rereads it on SIGHUP and must report the new CA before
 * anything else changes; then the gateway and record-signing certificates are
 * re-issued from the new CA as above. With `--ca-only` the certificates stay
 * (the platform can be given the new CA first; a later `cert renew` issues
 * from it). Any failure puts every file back and reloads the API and gateway.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { setTimeout as sleep } from 'node:timers/promises';
import { HospitalApiError } from '../errors/index.js';
import { readInstallConfig, writeInstallConfig, type InstallConfig } from '../install-dir/install-config.js';
import { generateCa, type KeyAndCert } from '../tls/pki.js';
import { parsePemBundle } from '../tls/inspect.js';
import { installPaths, type InstallPaths } from '../install-dir/layout.js';
import { roleIsUp } from '../runtime/component-role.js';
import { profileOf } from '../runtime/profiles.js';
import type { GatewayNode, Runtime } from '../runtime/types.js';
import { writeFileAtomic, writeSecretFile } from '../util/atomic-write.js';
import { certificateLifetimes, type CertificateLifetime } from '../install-dir/certificate-lifetimes.js';
import { keyMatches, prepareRenewal, type RenewChoice } from './tls.js';

const PICKUP_TIMEOUT_MS = 15_000;

/** A new CA: generated (the install owns its CA) or the hospital's (`certPath`, with RenewChoice.caKey). */
export interface CaChoice {
  generate?: boolean;
  /** Validity of a generated CA in days (default 3650). */
  days?: number;
  certPath?: string;
  /** Install the new CA (and make the API trust it) but keep the current certificates. */
  only?: boolean;
}

export interface RenewResult {
  how: 'reissued' | 'provided' | 'ca-only';
  /** The new CA, when one was installed. */
  ca?: { subject: string; fingerprint256: string; validTo: string; generated: boolean };
  certificates: CertificateLifetime[];
  /** True when the running gateway was seen presenting the new certificate; null when it was not running. */
  gatewayReloaded: boolean | null;
}

/** The certificate a fresh TLS handshake with the gateway at `address` gets, verified against the CA for `host`. */
export async function presentedFingerprint(caPem: string, port: number, host: string, address = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port, ca: caPem, rejectUnauthorized: true, ...(isIP(host) ? {} : { servername: host }), checkServerIdentity: (_h, cert) => {
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
    [paths.auditSealKey, read(paths.auditSealKey), true],
    [paths.auditSealCert, read(paths.auditSealCert), false],
  ];
}

function writeAll(files: Files): void {
  for (const [path, text, secret] of files) {
    if (text === null) continue;
    if (secret) writeSecretFile(path, text);
    else writeFileAtomic(path, text);
  }
}

/** Puts files back as `snapshot` read them; a file that did not exist then is removed. */
function restoreAll(files: Files): void {
  for (const [path, text] of files) if (text === null) rmSync(path, { force: true });
  writeAll(files);
}

function renewError(detail: string, hint: string): HospitalApiError {
  return new HospitalApiError('ERR_CERT_RENEW', { detail, hint });
}

function fileText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? 'error' }, { cause: err });
  }
}

/** The common name of a certificate's subject (node's multi-line subject text). */
function commonName(x: X509Certificate): string {
  return /^CN=(.*)$/m.exec(x.subject)?.[1] ?? 'Hospital API CA';
}

/**
 * Decides the new CA in memory and checks it: a generated one needs the
 * install's own CA (its key on disk); the hospital's must be a CA, valid,
 * with its key, and not the current one.
 */
function prepareNewCa(paths: InstallPaths, ca: CaChoice, caKey: string | undefined): { ca: KeyAndCert; generated: boolean } {
  const current = parsePemBundle(fileText(paths.caCert), paths.caCert)[0] as X509Certificate;
  if (ca.generate) {
    if (!existsSync(paths.caKey)) {
      throw renewError('the install does not hold its CA key (the hospital brought its own CA)', "Give the hospital's new CA with --ca-cert and --ca-key.");
    }
    if (ca.days !== undefined && (!Number.isInteger(ca.days) || ca.days < 30 || ca.days > 7300)) {
      throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--ca-days', detail: 'an integer from 30 to 7300' });
    }
    // A distinct name per CA, so the bundle never holds two CAs with one subject (chain building goes by name).
    const base = commonName(current).replace(/ \(from [0-9TZ:-]+\)$/, '');
    const stamp = new Date().toISOString().slice(0, 16).replace(/:/g, '-') + 'Z';
    return { ca: generateCa({ commonName: `${base} (from ${stamp})`, ...(ca.days ? { days: ca.days } : {}) }), generated: true };
  }
  if (!caKey) throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--ca-cert', detail: 'give the new CA key with --ca-key (it is used once and not stored)' });
  const certPem = fileText(ca.certPath as string);
  const keyPem = fileText(caKey);
  const x = parsePemBundle(certPem, ca.certPath)[0] as X509Certificate;
  if (!x.ca) throw new HospitalApiError('ERR_INSTALL_TLS_MISMATCH', { detail: `${ca.certPath} is not a CA certificate (basicConstraints CA:TRUE)` });
  if (!keyMatches(certPem, keyPem, caKey)) throw new HospitalApiError('ERR_INSTALL_TLS_MISMATCH', { detail: `${caKey} is not the key of ${ca.certPath}` });
  if (x.validToDate.getTime() < Date.now() + 86_400_000) throw new HospitalApiError('ERR_INSTALL_TLS_MISMATCH', { detail: `${ca.certPath} expires on ${x.validToDate.toISOString()}` });
  if (x.fingerprint256 === current.fingerprint256) {
    throw renewError(`${ca.certPath} is already the install's CA`, 'Run `hospital-api cert renew --ca-key <file>` to re-issue from it.');
  }
  return { ca: { certPem: x.toString(), keyPem }, generated: false };
}

/** tls/ca.pem after the change: the new CA first, then every CA it held before (each once). */
function caBundle(newCaPem: string, currentBundle: string): string {
  const seen = new Set<string>();
  return [new X509Certificate(newCaPem), ...parsePemBundle(currentBundle)]
    .filter((x) => !seen.has(x.fingerprint256) && !!seen.add(x.fingerprint256))
    .map((x) => x.toString().trim())
    .join('\n') + '\n';
}

/**
 * Installs a new CA: the bundle and (generated CA) its key, then the running
 * API rereads its trust and must report the new CA. Returns the undo.
 */
async function installNewCa(runtime: Runtime, paths: InstallPaths, next: { ca: KeyAndCert; generated: boolean }, apiUp: boolean, log: (text: string) => void): Promise<() => Promise<void>> {
  const currentBundle = fileText(paths.caCert);
  // Only the certificate bundle changes here: the CA key file is swapped last (swapCaKey), once everything
  // issued from the new CA is in place, so no crash in between can lose the key of the CA still in use.
  const before: Files = [[paths.caCert, currentBundle, false]];
  const undo = async (): Promise<void> => {
    restoreAll(before);
    if (apiUp) await runtime.reloadApiKey().catch(() => undefined);
  };
  const want = new X509Certificate(next.ca.certPem).fingerprint256;
  try {
    writeFileAtomic(paths.caCert, caBundle(next.ca.certPem, currentBundle));
    log(`Installed the new CA in ${paths.caCert} (before the previous one, which stays trusted so earlier records still verify)`);
    if (apiUp) {
      const r = await runtime.reloadApiKey();
      if (r.caFingerprint !== want || r.gateway !== 'ok' || r.error) {
        throw renewError(
          `the Hospital API did not take the new CA (it trusts ${r.caFingerprint ?? 'the system store'}; gateway ${r.gateway}${r.error ? `; ${r.error}` : ''})`,
          'See `hospital-api logs api`; the previous CA files are back.',
        );
      }
      log('the Hospital API trusts the new CA for new connections to the gateway (no restart)');
    }
  } catch (err) {
    await undo();
    throw err;
  }
  return undo;
}

/** The last step of a CA change: the generated CA's key replaces the old one; the hospital's CA key is used once and never stored. */
function swapCaKey(paths: InstallPaths, next: { ca: KeyAndCert; generated: boolean }): void {
  if (next.generated) writeSecretFile(paths.caKey, next.ca.keyPem);
  else rmSync(paths.caKey, { force: true });
}

export async function renewCertificates(runtime: Runtime, dir: string, choice: RenewChoice, log: (text: string) => void, newCa?: CaChoice): Promise<RenewResult> {
  const paths = installPaths(dir);
  const config = readInstallConfig(dir);
  if (!newCa) return renewLeaves(runtime, dir, config, choice, log);
  if (choice.cert || choice.key || choice.signerCert || choice.signerKey || choice.auditSealCert || choice.auditSealKey) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: newCa.generate ? '--renew-ca' : '--ca-cert', detail: 'the certificates are re-issued from the new CA: leave out --cert/--key/--signer-cert/--signer-key/--audit-seal-cert/--audit-seal-key' });
  }
  // Everything is decided and checked before a file changes.
  const next = prepareNewCa(paths, newCa, choice.caKey);
  const renewed = newCa.only ? null : prepareRenewal(paths, config.hosts, choice.days === undefined ? {} : { days: choice.days }, next.ca);
  const apiUp = await roleIsUp(runtime, 'api');
  const undo = await installNewCa(runtime, paths, next, apiUp, log);
  let result: RenewResult;
  try {
    result = renewed ? await renewLeaves(runtime, dir, config, choice, log, renewed) : { how: 'ca-only', certificates: certificateLifetimes(paths), gatewayReloaded: null };
  } catch (err) {
    await undo();
    throw err;
  }
  swapCaKey(paths, next);
  if (config.caGenerated !== next.generated) writeInstallConfig(dir, { ...config, caGenerated: next.generated });
  const x = new X509Certificate(next.ca.certPem);
  log(newCa.only
    ? 'The gateway and record-signing certificates stay as they are. Give the platform the new CA (tls/ca.pem), then run `hospital-api cert renew` to issue from it.'
    : 'The platform must trust the new CA (tls/ca.pem) to verify the gateway from now on.');
  return { ...result, ca: { subject: x.subject.replace(/\n/g, ', '), fingerprint256: x.fingerprint256, validTo: x.validToDate.toISOString(), generated: next.generated } };
}

async function renewLeaves(runtime: Runtime, dir: string, config: InstallConfig, choice: RenewChoice, log: (text: string) => void, prepared?: ReturnType<typeof prepareRenewal>): Promise<RenewResult> {
  const paths = installPaths(dir);
  // Everything is decided and checked before a file changes.
  const renewed = prepared ?? prepareRenewal(paths, config.hosts, choice);
  const before = snapshot(paths);
  const next: Files = [
    [paths.gatewayKey, renewed.gateway.keyPem, true],
    [paths.gatewayCert, renewed.gateway.certPem, false],
    [paths.signerKey, renewed.signer?.keyPem ?? null, true],
    [paths.signerCert, renewed.signer?.certPem ?? null, false],
    [paths.auditSealKey, renewed.auditSeal?.keyPem ?? null, true],
    [paths.auditSealCert, renewed.auditSeal?.certPem ?? null, false],
  ];
  const gatewayUp = await roleIsUp(runtime, 'gateway');
  try {
    writeAll(next);
  } catch (err) {
    restoreAll(before);
    throw err;
  }
  log(`${renewed.how === 'reissued' ? 'Re-issued' : 'Installed the provided'} gateway certificate${renewed.signer ? ' and record-signing certificate' : ''}${renewed.auditSeal ? ' and audit-seal certificate (a running Hospital API that seals its log seals with it from its next seal, no restart)' : ''} in ${paths.tls}`);
  let gatewayReloaded: boolean | null = null;
  if (gatewayUp) {
    const want = new X509Certificate(renewed.gateway.certPem).fingerprint256;
    const caPem = readFileSync(paths.caCert, 'utf8');
    const host = config.hosts[0] ?? 'localhost';
    // everything from the reload to the last probe: on any failure the previous files go back and are reloaded
    let targets: GatewayNode[] = [];
    let behind: typeof targets = [];
    let lastError = '';
    try {
      const reload = await runtime.reloadGatewayTls();
      // every address new connections reach the gateway at: this host's, or each node that publishes it (swarm)
      // (one host: the address the gateway's HTTPS port is published on, a site's LAN address when bound there; issue 48)
      targets = runtime.gatewayNodes ? await runtime.gatewayNodes() : [{ node: 'this host', address: profileOf(config.runtime).publishedAddress(config) }];
      const deadline = Date.now() + PICKUP_TIMEOUT_MS;
      behind = targets;
      while (behind.length > 0 && Date.now() < deadline) {
        const still: typeof targets = [];
        for (const t of behind) {
          try {
            // a host with no known address cannot be shown to present it: it stays behind (fail closed)
            if (t.address === null) throw new Error('no address known for it');
            if ((await presentedFingerprint(caPem, config.ports.gatewayHttps, host, t.address)) !== want) still.push(t);
          } catch (err) {
            lastError = `${t.node}: ${(err as Error).message}`;
            still.push(t);
          }
        }
        behind = still;
        if (behind.length > 0) await sleep(100);
      }
      if (targets.length === 0) throw renewError('after the reload no host publishes the gateway', 'See `hospital-api status`; the previous certificate files are back.');
      if (behind.length > 0) throw new HospitalApiError('ERR_CERT_NOT_PICKED_UP', { seconds: PICKUP_TIMEOUT_MS / 1000 });
      gatewayReloaded = true;
      log(`the gateway presents the new certificate to new connections${targets.length > 1 ? ` on ${targets.length} hosts (${targets.map((t) => t.node).join(', ')})` : ''}, verified against the CA; ${reload.connections}`);
    } catch (err) {
      restoreAll(before);
      const back = await runtime.reloadGatewayTls().then(
        () => 'the previous files are back and reloaded',
        (e: unknown) => `the previous files are back, but reloading them failed too (${(e as Error).message}): run \`hospital-api up\``,
      );
      const notPickedUp = err instanceof HospitalApiError && err.code === 'ERR_CERT_NOT_PICKED_UP';
      const why = notPickedUp ? `not on ${behind.map((t) => t.node).join(', ')}` : (err as Error).message;
      log(`the gateway did not take the new certificate (${why}${lastError ? `; ${lastError}` : ''}); ${back}`);
      throw err;
    }
  } else {
    log('the gateway is not running: it loads the new certificate when it starts');
  }
  return { how: renewed.how, certificates: certificateLifetimes(paths), gatewayReloaded };
}
