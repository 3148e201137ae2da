/**
 * The install directory: one place for everything an installation owns, so
 * install, up/down/status, verify and the docker templates agree on paths.
 *
 *   <dir>/install.json          what was installed (no secrets): runtime, hosts, ports
 *   <dir>/hospital-api.env      the Hospital API's settings (mode 0600: holds FHIR_API_KEY)
 *   <dir>/secrets/              generated secrets, one file each (dir 0700, files 0600)
 *   <dir>/tls/                  ca.pem [ca.key], gateway.pem gateway.key, record-signer.pem record-signer.key,
 *                               [audit-seal.pem audit-seal.key] (the API's own key, for its audit log's seals: issue 46)
 *   <dir>/gateway/state.json    native gateway configuration
 *   <dir>/fhir/                 native FHIR server data
 *   <dir>/logs/<component>.log  native component logs
 *   <dir>/run/                  native supervisor state (pids, ports, start times)
 *   <dir>/reports/              signed acceptance records written by verify
 *   <dir>/docker/               rendered compose project (docker runtime)
 */
import { join, resolve } from 'node:path';

/** Where commands look when --dir is not given: $HOSPITAL_API_DIR, else ./.hospital-api */
export function defaultInstallDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.HOSPITAL_API_DIR || '.hospital-api');
}

export function installPaths(dir: string) {
  const root = resolve(dir);
  return {
    root,
    installJson: join(root, 'install.json'),
    apiEnv: join(root, 'hospital-api.env'),
    secrets: join(root, 'secrets'),
    tls: join(root, 'tls'),
    caCert: join(root, 'tls', 'ca.pem'),
    caKey: join(root, 'tls', 'ca.key'),
    gatewayCert: join(root, 'tls', 'gateway.pem'),
    gatewayKey: join(root, 'tls', 'gateway.key'),
    signerCert: join(root, 'tls', 'record-signer.pem'),
    signerKey: join(root, 'tls', 'record-signer.key'),
    /** The audit log's seal signer (issue 46): the one key the Hospital API holds; never the record signer's. */
    auditSealCert: join(root, 'tls', 'audit-seal.pem'),
    auditSealKey: join(root, 'tls', 'audit-seal.key'),
    gatewayState: join(root, 'gateway', 'state.json'),
    fhirData: join(root, 'fhir'),
    logs: join(root, 'logs'),
    run: join(root, 'run'),
    reports: join(root, 'reports'),
    docker: join(root, 'docker'),
    /** DEMO ONLY: the platform stand-in's tokens (written by src/demo/tokens.ts). */
    demoTokens: join(root, 'demo', 'tokens.json'),
  } as const;
}

export type InstallPaths = ReturnType<typeof installPaths>;
