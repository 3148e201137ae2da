/** `record verify`: reads a record and its `.p7s`, and checks both against the CA; `--chain`, every record of a folder. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { defaultInstallDir, installPaths } from '../../install-dir/layout.js';
import type { CertificateInfo } from '../../tls/inspect.js';
import { verifyChain, type ChainReport } from './chain.js';
import { verifyDetached } from '../../tls/cms-verify.js';

export interface RecordCheck {
  record: string;
  signature: string;
  ca: string;
  signer: CertificateInfo;
  signingTime: string | null;
}

function read(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  }
}

/**
 * The CA: --ca, else --dir's, else the install the folder `reports` is in (<dir>/reports/), else the default
 * install's if it has one. Never a CA file that does not exist and the user did not name.
 * @throws ERR_INSTALL_RECORD_NO_CA (a usage problem) when none of them is there
 */
function caFor(reports: string, options: { ca?: string; dir?: string }, what: string): string {
  if (options.ca) return resolve(options.ca);
  if (options.dir) return installPaths(options.dir).caCert;
  const beside = installPaths(dirname(reports)).caCert;
  if (existsSync(beside)) return beside;
  const installed = installPaths(defaultInstallDir()).caCert;
  if (existsSync(installed)) return installed;
  throw new HospitalApiError('ERR_INSTALL_RECORD_NO_CA', { path: what, beside });
}

/** @throws ERR_INSTALL_RECORD_NO_CA without a CA to use; ERR_INSTALL_RECORD_INVALID when the signature or the chain does not verify */
export function verifyRecordFile(path: string, options: { ca?: string; dir?: string }): RecordCheck {
  const record = resolve(path);
  const signature = `${record}.p7s`;
  const ca = caFor(dirname(record), options, record);
  const result = verifyDetached(read(record), read(signature).toString('utf8'), read(ca).toString('utf8'), 'record');
  if (!result.ok || !result.signer) {
    throw new HospitalApiError('ERR_INSTALL_RECORD_INVALID', { path: record, detail: result.reason ?? 'unknown' });
  }
  return { record, signature, ca, signer: result.signer, signingTime: result.signingTime };
}

/** `record verify --chain <folder>`: every record's signature under the CA, and the chain they form (chain.ts). */
export function verifyRecordChain(folder: string, options: { ca?: string; dir?: string }): ChainReport & { ca: string } {
  const path = resolve(folder);
  const ca = caFor(path, options, path);
  return { ...verifyChain(path, read(ca).toString('utf8')), ca };
}
