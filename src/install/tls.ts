/**
 * The install's TLS material, decided in memory before anything is written:
 * a generated hospital CA (reused on rerun) or the hospital's own CA, the
 * gateway server certificate, the record-signing certificate (issue 5) and the
 * audit-seal certificate, the one signing key the Hospital API holds (issue 46).
 */
import { createPrivateKey, type X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { HospitalApiError } from '../errors/index.js';
import { generateCa, issueCertificate, SERVER_CERT_MAX_DAYS, type KeyAndCert } from '../tls/pki.js';
import { parsePemBundle } from '../tls/inspect.js';
import { signerUsageProblem } from '../checks/index.js';
import { AUDIT_SEAL_COMMON_NAME, signerRoleProblem } from '../tls/cms-verify.js';
import type { InstallPaths } from '../install-dir/layout.js';
import type { TlsChoice } from './options.js';

export interface TlsMaterial {
  caPem: string;
  /** Only when we generated the CA (or the hospital lent us its key). */
  caKeyPem: string | null;
  gateway: KeyAndCert;
  signer: KeyAndCert;
  /**
   * The audit log's seal signer (issue 46), apart from the record signer so the
   * internet-facing API never holds a key that signs acceptance records. Null:
   * a hospital CA whose key was not given and no --audit-seal-cert: no seals.
   */
  auditSeal: KeyAndCert | null;
  caGenerated: boolean;
}

const RENEW_WITHIN_MS = 30 * 86_400_000;

function read(path: string): string | null {
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
}

function cert(pem: string, path: string): X509Certificate {
  return parsePemBundle(pem, path)[0] as X509Certificate;
}

export function chainsTo(leafPem: string, caPem: string): boolean {
  const leaf = cert(leafPem, 'certificate');
  return parsePemBundle(caPem, 'ca').some((ca) => leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
}

export function keyMatches(certPem: string, keyPem: string, path: string): boolean {
  try {
    return cert(certPem, path).checkPrivateKey(createPrivateKey(keyPem));
  } catch (err) {
    throw new HospitalApiError('ERR_TLS_MATERIAL', { path, detail: (err as Error).message }, { cause: err });
  }
}

export function coversHost(certPem: string, host: string): boolean {
  const c = cert(certPem, 'certificate');
  return isIP(host) ? c.checkIP(host) !== undefined : c.checkHost(host) !== undefined;
}

function fresh(certPem: string): boolean {
  return new Date(cert(certPem, 'certificate').validTo).getTime() - Date.now() > RENEW_WITHIN_MS;
}

function usable(pair: KeyAndCert | null, caPem: string, hosts: string[]): pair is KeyAndCert {
  return (
    pair !== null &&
    chainsTo(pair.certPem, caPem) &&
    fresh(pair.certPem) &&
    hosts.every((h) => coversHost(pair.certPem, h))
  );
}

function existingPair(certPath: string, keyPath: string): KeyAndCert | null {
  const certPem = read(certPath);
  const keyPem = read(keyPath);
  return certPem && keyPem ? { certPem, keyPem } : null;
}

function issueGateway(ca: KeyAndCert, hosts: string[]): KeyAndCert {
  return issueCertificate(ca, { commonName: hosts[0] as string, hosts, usage: 'server' });
}

function issueSigner(ca: KeyAndCert): KeyAndCert {
  return issueCertificate(ca, { commonName: 'Hospital API acceptance record signer', usage: 'signing' });
}

/** The audit-seal certificate: CMS signing like the signer, told apart by its name (src/tls/cms-verify.ts). */
export function issueAuditSeal(ca: KeyAndCert, days?: number): KeyAndCert {
  return issueCertificate(ca, { commonName: AUDIT_SEAL_COMMON_NAME, usage: 'signing', ...(days ? { days } : {}) });
}

/** Why a certificate cannot serve as `role`'s signer (usage, then role), or null. */
export function roleUsageProblem(certPem: string, role: 'record' | 'audit-seal'): string | null {
  const c = cert(certPem, 'certificate');
  return signerUsageProblem(c) ?? signerRoleProblem(c, role);
}

/** The pair on disk when it still serves as the record signer or the audit seal: chains to the CA, fresh, right usage and role. */
function usableAs(pair: KeyAndCert | null, caPem: string, role: 'record' | 'audit-seal'): pair is KeyAndCert {
  return usable(pair, caPem, []) && roleUsageProblem(pair.certPem, role) === null;
}

/** The audit seal on disk, valid now, of this CA and for sealing (even within the renewal window). */
function stillServes(certPem: string, caPem: string): boolean {
  return chainsTo(certPem, caPem) && roleUsageProblem(certPem, 'audit-seal') === null && Date.parse(cert(certPem, 'audit seal').validTo) > Date.now();
}

/** A certificate and key the hospital gave for `role`, checked like install checks the gateway's. */
function givenSigner(certPath: string, keyPath: string, caPem: string, role: 'record' | 'audit-seal'): KeyAndCert {
  const pair = { certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
  if (!chainsTo(pair.certPem, caPem)) throw mismatch(`${certPath} is not issued by the CA`);
  if (!keyMatches(pair.certPem, pair.keyPem, keyPath)) throw mismatch(`${keyPath} is not the key of ${certPath}`);
  // record verify (or audit verify) would refuse everything it signs (src/tls/cms-verify.ts)
  const problem = roleUsageProblem(pair.certPem, role);
  if (problem) throw mismatch(`${certPath}: ${problem}`);
  return pair;
}

/** Generated CA: reuse what a previous run made so a rerun changes nothing. */
function generated(paths: InstallPaths, certHosts: string[]): TlsMaterial {
  const prevCa = existingPair(paths.caCert, paths.caKey);
  const ca = prevCa && fresh(prevCa.certPem) ? prevCa : generateCa({ commonName: 'Hospital API CA' });
  const prevGateway = existingPair(paths.gatewayCert, paths.gatewayKey);
  const gateway = usable(prevGateway, ca.certPem, certHosts) ? prevGateway : issueGateway(ca, certHosts);
  const prevSigner = existingPair(paths.signerCert, paths.signerKey);
  const signer = usableAs(prevSigner, ca.certPem, 'record') ? prevSigner : issueSigner(ca);
  // an install from before the audit seal gets one here, on its next install or `up` (audit-seal-upgrade.ts)
  const prevSeal = existingPair(paths.auditSealCert, paths.auditSealKey);
  const auditSeal = usableAs(prevSeal, ca.certPem, 'audit-seal') ? prevSeal : issueAuditSeal(ca);
  return { caPem: ca.certPem, caKeyPem: ca.keyPem, gateway, signer, auditSeal, caGenerated: true };
}

function mismatch(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_INSTALL_TLS_MISMATCH', { detail });
}

/** Names the runtime itself connects to, with why; a provided certificate must name them too. */
export interface RuntimeName {
  runtime: string;
  name: string;
  why: string;
}

/** The hospital's own CA and gateway certificate, validated before use. */
function provided(choice: Extract<TlsChoice, { mode: 'provided' }>, paths: InstallPaths, hosts: string[], required: RuntimeName[]): TlsMaterial {
  const caPem = readFileSync(choice.ca, 'utf8');
  parsePemBundle(caPem, choice.ca);
  const gateway = { certPem: readFileSync(choice.cert, 'utf8'), keyPem: readFileSync(choice.key, 'utf8') };
  if (!chainsTo(gateway.certPem, caPem)) throw mismatch(`${choice.cert} is not issued by the CA in ${choice.ca}`);
  if (!keyMatches(gateway.certPem, gateway.keyPem, choice.key)) throw mismatch(`${choice.key} is not the key of ${choice.cert}`);
  const missing = hosts.filter((h) => !coversHost(gateway.certPem, h));
  if (missing.length) throw mismatch(`${choice.cert} does not name ${missing.join(', ')} (add them or drop --host)`);
  const unnamed = required.filter((r) => !coversHost(gateway.certPem, r.name));
  if (unnamed.length) {
    throw new HospitalApiError('ERR_INSTALL_TLS_NAME_MISSING', {
      cert: choice.cert,
      missing: unnamed.map((r) => r.name).join(', '),
      runtime: unnamed[0]?.runtime ?? '',
      why: unnamed.map((r) => r.why).join('; '),
    });
  }
  let signer: KeyAndCert | null = null;
  let auditSeal: KeyAndCert | null = null;
  // the hospital CA's key, read once when something must be issued from it; never stored
  let lentCa: KeyAndCert | null = null;
  const fromCa = (): KeyAndCert | null => {
    if (!choice.caKey) return null;
    if (!lentCa) {
      const keyPem = readFileSync(choice.caKey, 'utf8');
      if (!keyMatches(caPem, keyPem, choice.caKey)) throw mismatch(`${choice.caKey} is not the key of the CA`);
      lentCa = { certPem: caPem, keyPem };
    }
    return lentCa;
  };
  if (choice.signerCert && choice.signerKey) signer = givenSigner(choice.signerCert, choice.signerKey, caPem, 'record');
  else {
    const prev = existingPair(paths.signerCert, paths.signerKey);
    if (usableAs(prev, caPem, 'record')) signer = prev;
    else {
      const ca = fromCa();
      if (ca) signer = issueSigner(ca);
    }
  }
  if (choice.auditSealCert && choice.auditSealKey) auditSeal = givenSigner(choice.auditSealCert, choice.auditSealKey, caPem, 'audit-seal');
  else {
    const prev = existingPair(paths.auditSealCert, paths.auditSealKey);
    // kept while still valid when there is no CA key to re-issue it: near its end, `cert status` warns,
    // and dropping it would leave the log unsealed (files.ts removes one that no longer serves)
    const kept = prev !== null && !choice.caKey && stillServes(prev.certPem, caPem);
    if (kept || usableAs(prev, caPem, 'audit-seal')) auditSeal = prev;
    else {
      const ca = fromCa();
      if (ca) auditSeal = issueAuditSeal(ca);
    }
  }
  if (!signer) {
    throw new HospitalApiError('ERR_INSTALL_TLS_OPTIONS', {
      detail: 'a record-signing certificate is needed: pass --signer-cert/--signer-key, or --ca-key to issue one',
    });
  }
  return { caPem, caKeyPem: null, gateway, signer, auditSeal, caGenerated: false };
}

/** What was installed before, when neither --generate-ca nor --ca is given. */
function kept(paths: InstallPaths, certHosts: string[], hosts: string[], required: RuntimeName[]): TlsMaterial {
  const caPem = read(paths.caCert);
  if (!caPem) {
    throw new HospitalApiError('ERR_INSTALL_TLS_OPTIONS', { detail: 'this directory has no TLS material yet' });
  }
  if (existsSync(paths.caKey)) return generated(paths, certHosts);
  return provided({ mode: 'provided', ca: paths.caCert, cert: paths.gatewayCert, key: paths.gatewayKey }, paths, hosts, required);
}

/**
 * @param hosts the names the hospital gave (--host)
 * @param extraHosts names the runtime needs as well (localhost, 127.0.0.1, kong)
 * @param required names a provided certificate must carry besides --host (docker: kong)
 * @throws ERR_INSTALL_TLS_OPTIONS, ERR_INSTALL_TLS_MISMATCH, ERR_INSTALL_TLS_NAME_MISSING, ERR_TLS_MATERIAL
 */
export function prepareTls(choice: TlsChoice, paths: InstallPaths, hosts: string[], extraHosts: string[], required: RuntimeName[] = []): TlsMaterial {
  const certHosts = [...new Set([...hosts, ...extraHosts])];
  if (choice.mode === 'generate') return generated(paths, certHosts);
  if (choice.mode === 'provided') return provided(choice, paths, hosts, required);
  return kept(paths, certHosts, hosts, required);
}

// ---------------------------------------------------------------------------
// Day two (issue 15): days left on each certificate, and `cert renew`.

export interface RenewChoice {
  /** Validity of re-issued certificates (ignored for provided ones). */
  days?: number;
  /** The hospital CA's key, used once and never stored (when the install did not generate its CA). */
  caKey?: string;
  /** The hospital's new certificates instead of re-issuing. */
  cert?: string;
  key?: string;
  signerCert?: string;
  signerKey?: string;
  /** The hospital's new audit-seal certificate (issue 46), with --cert/--key. */
  auditSealCert?: string;
  auditSealKey?: string;
}

export interface RenewedTls {
  gateway: KeyAndCert;
  /** Null when the record-signing certificate stays (a provided gateway certificate without a new signer). */
  signer: KeyAndCert | null;
  /** Null when the audit-seal certificate stays (provided certificates: the hospital renews it with install --audit-seal-cert). */
  auditSeal: KeyAndCert | null;
  how: 'reissued' | 'provided';
}

/** The names a renewed gateway certificate must carry: what the current one names (SANs), plus install's hosts. */
function currentSans(pem: string): string[] {
  const san = cert(pem, 'gateway certificate').subjectAltName ?? '';
  return san.split(/,\s*/).flatMap((entry) => {
    const m = /^(DNS|IP Address):(.+)$/.exec(entry.trim());
    return m ? [m[2] as string] : [];
  });
}

function renewError(detail: string, hint: string): HospitalApiError {
  return new HospitalApiError('ERR_CERT_RENEW', { detail, hint });
}

/**
 * Decides the new gateway and record-signing certificates in memory (nothing
 * is written here): re-issued from the install's CA key (generated CA) or the
 * one given with --ca-key, or the hospital's own given with --cert/--key, each
 * checked like install checks them (chains to the install's CA, key matches,
 * names every host the current certificate names, signer usage).
 * @throws ERR_CERT_RENEW, ERR_INSTALL_TLS_MISMATCH, ERR_TLS_MATERIAL
 */
export function prepareRenewal(paths: InstallPaths, hosts: string[], choice: RenewChoice, newCa?: KeyAndCert): RenewedTls {
  const caPem = newCa?.certPem ?? read(paths.caCert);
  const oldGateway = read(paths.gatewayCert);
  if (!caPem || !oldGateway) throw renewError(`${paths.tls} holds no CA or gateway certificate`, 'Run `hospital-api install` first.');
  const names = [...new Set([...hosts, ...currentSans(oldGateway)])];
  if (choice.days !== undefined && (!Number.isInteger(choice.days) || choice.days < 1 || choice.days > SERVER_CERT_MAX_DAYS)) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--days', detail: `an integer from 1 to ${SERVER_CERT_MAX_DAYS} (a server certificate's longest life)` });
  }
  const fileText = (path: string): string => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? 'error' }, { cause: err });
    }
  };
  if (choice.cert || choice.key) {
    if (!choice.cert || !choice.key) throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--cert/--key', detail: 'give both' });
    if ((choice.signerCert === undefined) !== (choice.signerKey === undefined)) {
      throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--signer-cert/--signer-key', detail: 'give both or neither' });
    }
    if ((choice.auditSealCert === undefined) !== (choice.auditSealKey === undefined)) {
      throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--audit-seal-cert/--audit-seal-key', detail: 'give both or neither' });
    }
    const gateway = { certPem: fileText(choice.cert), keyPem: fileText(choice.key) };
    if (!chainsTo(gateway.certPem, caPem)) throw mismatch(`${choice.cert} is not issued by the install's CA (${paths.caCert})`);
    if (!keyMatches(gateway.certPem, gateway.keyPem, choice.key)) throw mismatch(`${choice.key} is not the key of ${choice.cert}`);
    const missing = names.filter((h) => !coversHost(gateway.certPem, h));
    if (missing.length) throw mismatch(`${choice.cert} does not name ${missing.join(', ')}, which the current certificate names`);
    let signer: KeyAndCert | null = null;
    if (choice.signerCert && choice.signerKey) {
      signer = { certPem: fileText(choice.signerCert), keyPem: fileText(choice.signerKey) };
      if (!chainsTo(signer.certPem, caPem)) throw mismatch(`${choice.signerCert} is not issued by the install's CA`);
      if (!keyMatches(signer.certPem, signer.keyPem, choice.signerKey)) throw mismatch(`${choice.signerKey} is not the key of ${choice.signerCert}`);
      const usage = roleUsageProblem(signer.certPem, 'record');
      if (usage) throw mismatch(`${choice.signerCert}: ${usage}`);
    }
    let auditSeal: KeyAndCert | null = null;
    if (choice.auditSealCert && choice.auditSealKey) {
      auditSeal = { certPem: fileText(choice.auditSealCert), keyPem: fileText(choice.auditSealKey) };
      if (!chainsTo(auditSeal.certPem, caPem)) throw mismatch(`${choice.auditSealCert} is not issued by the install's CA`);
      if (!keyMatches(auditSeal.certPem, auditSeal.keyPem, choice.auditSealKey)) throw mismatch(`${choice.auditSealKey} is not the key of ${choice.auditSealCert}`);
      const usage = roleUsageProblem(auditSeal.certPem, 'audit-seal');
      if (usage) throw mismatch(`${choice.auditSealCert}: ${usage}`);
    }
    return { gateway, signer, auditSeal, how: 'provided' };
  }
  if (choice.auditSealCert || choice.auditSealKey) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--audit-seal-cert/--audit-seal-key', detail: 'go with --cert/--key (re-issued certificates include a new audit seal)' });
  }
  const caKeyPem = newCa?.keyPem ?? (choice.caKey ? fileText(choice.caKey) : read(paths.caKey));
  if (!caKeyPem) {
    throw renewError('the install has no CA key to re-issue from (the hospital brought its own CA)', 'Pass the hospital CA key once with --ca-key (it is not stored), or the new certificates with --cert/--key [--signer-cert/--signer-key].');
  }
  if (!keyMatches(caPem, caKeyPem, choice.caKey ?? paths.caKey)) throw mismatch(`${choice.caKey ?? paths.caKey} is not the key of the CA`);
  const ca = { certPem: caPem, keyPem: caKeyPem };
  const days = choice.days ? { days: choice.days } : {};
  return {
    gateway: issueCertificate(ca, { commonName: names[0] ?? 'localhost', hosts: names, usage: 'server', ...days }),
    signer: issueCertificate(ca, { commonName: 'Hospital API acceptance record signer', usage: 'signing', ...days }),
    // renewed with the signer, from the same CA key, so an install that had none gets one here too
    auditSeal: issueAuditSeal(ca, choice.days),
    how: 'reissued',
  };
}
