import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { certificateLifetimes, CERT_WARN_DAYS } from '../install-dir/certificate-lifetimes.js';
import { HospitalApiError } from '../errors/index.js';
import { renderTable } from '../output/table.js';

interface CertOptions extends GlobalOptions {
  dir?: string;
  days?: string;
  caKey?: string;
  cert?: string;
  key?: string;
  signerCert?: string;
  signerKey?: string;
  auditSealCert?: string;
  auditSealKey?: string;
  renewCa?: boolean;
  caCert?: string;
  caDays?: string;
  caOnly?: boolean;
}

const DIR_HELP = 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)';

/**
 * `hospital-api cert status` (days left on each certificate) and `cert renew`
 * (new gateway and record-signing certificates, installed without downtime). Issue 15.
 */
export function register(program: Command): void {
  const cert = program.command('cert').description(SUMMARIES.cert);
  cert
    .command('status')
    .description('days left on the CA, gateway and record-signing certificates (exit 1 when one is under 30 days)')
    .option('--dir <dir>', DIR_HELP)
    .action(
      action<CertOptions>('cert status', async (options, io) => {
        const certificates = certificateLifetimes(installPaths(options.dir ?? defaultInstallDir()));
        const short = certificates.filter((c) => c.daysLeft < CERT_WARN_DAYS);
        if (io.json) io.out(JSON.stringify({ ok: short.length === 0, command: 'cert status', result: { certificates, warnDays: CERT_WARN_DAYS } }));
        else await renderCertificates(io, certificates, CERT_WARN_DAYS);
        return short.length ? 1 : 0;
      }),
    );
  cert
    .command('renew')
    .description('re-issue the gateway and record-signing certificates from the hospital CA (or install the given ones) without downtime')
    .option('--dir <dir>', DIR_HELP)
    .option('--days <n>', 'validity of re-issued certificates in days, at most 365 (default: 365 for the gateway, 825 for the record signer and the audit seal)')
    .option('--ca-key <file>', 'the hospital CA key (of the new CA with --ca-cert), used once to issue and never stored (when install did not generate the CA)')
    .option('--renew-ca', 'a new CA first (installs that generated theirs): tls/ca.pem holds it and the previous CA; the API trusts it without a restart; then both certificates are issued from it')
    .option('--ca-cert <file>', "the hospital's new CA (with --ca-key), installed as --renew-ca installs a generated one")
    .option('--ca-days <n>', 'validity of a new generated CA in days (default 3650)')
    .option('--ca-only', 'with --renew-ca/--ca-cert: install the new CA and its trust only, keep the current certificates (give the platform the new CA, then run `cert renew`)')
    .option('--cert <file>', "the hospital's new gateway certificate (with --key) instead of re-issuing")
    .option('--key <file>', 'its private key')
    .option('--signer-cert <file>', "the hospital's new record-signing certificate (with --signer-key)")
    .option('--signer-key <file>', 'its private key')
    .option('--audit-seal-cert <file>', 'with --cert/--key: the hospital\'s new audit-seal certificate (subject CN "hospital-api audit seal", with --audit-seal-key)')
    .option('--audit-seal-key <file>', 'its private key')
    .action(
      action<CertOptions>('cert renew', async (options, io) => {
        const { openRuntime } = await import('../runtime/index.js');
        const { renewCertificates } = await import('../install/cert-renew.js');
        const dir = options.dir ?? defaultInstallDir();
        const days = options.days === undefined ? undefined : /^\d+$/.test(options.days) ? Number(options.days) : NaN;
        const caDays = options.caDays === undefined ? undefined : /^\d+$/.test(options.caDays) ? Number(options.caDays) : NaN;
        if (options.renewCa && options.caCert) throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--renew-ca/--ca-cert', detail: 'give one: a generated CA or the hospital\'s' });
        if ((options.caOnly || caDays !== undefined) && !options.renewCa && !options.caCert) {
          throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: options.caOnly ? '--ca-only' : '--ca-days', detail: 'goes with --renew-ca or --ca-cert' });
        }
        const newCa = options.renewCa || options.caCert
          ? { ...(options.renewCa ? { generate: true } : { certPath: options.caCert as string }), ...(caDays === undefined ? {} : { days: caDays }), ...(options.caOnly ? { only: true } : {}) }
          : undefined;
        const result = await renewCertificates(
          await openRuntime(dir),
          dir,
          {
            ...(days === undefined ? {} : { days }),
            ...(options.caKey ? { caKey: options.caKey } : {}),
            ...(options.cert ? { cert: options.cert } : {}),
            ...(options.key ? { key: options.key } : {}),
            ...(options.signerCert ? { signerCert: options.signerCert } : {}),
            ...(options.signerKey ? { signerKey: options.signerKey } : {}),
            ...(options.auditSealCert ? { auditSealCert: options.auditSealCert } : {}),
            ...(options.auditSealKey ? { auditSealKey: options.auditSealKey } : {}),
          },
          (t) => io.log(t),
          newCa,
        );
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'cert renew', result }));
        else {
          await renderCertificates(io, result.certificates, CERT_WARN_DAYS);
          io.log('Run `hospital-api verify` to record the renewed installation.');
        }
      }),
    );
}

export async function renderCertificates(
  io: import('../output/io.js').Io,
  certificates: Array<{ name: string; validTo: string; daysLeft: number; subject: string }>,
  warnDays: number,
): Promise<void> {
  io.out(
    renderTable(
      ['CERTIFICATE', 'DAYS LEFT', 'VALID UNTIL', 'SUBJECT'],
      certificates.map((c) => [
        c.name,
        c.daysLeft < warnDays ? io.colour.yellow(`${c.daysLeft} (renew: hospital-api cert renew)`) : String(c.daysLeft),
        c.validTo,
        c.subject,
      ]),
    ).trimEnd(),
  );
}
