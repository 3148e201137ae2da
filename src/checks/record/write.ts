/**
 * Writes a record to <install dir>/reports/: `acceptance-<time>.json`, its
 * detached signature `.json.p7s` and a Markdown copy `.md`. Under the folder's
 * lock, the record is linked to the one before it (chain.ts) before it is signed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { installPaths } from '../../install-dir/layout.js';
import { serializeRecord, type AcceptanceRecord } from './build.js';
import { renderRecordMarkdown } from './markdown.js';
import { chainHead, withChainLock } from './chain.js';
import { signDetached } from '../../tls/cms-sign.js';

export interface WrittenRecord {
  json: string;
  signature: string;
  markdown: string;
  /** The record as written: linked to the one before it. */
  record: AcceptanceRecord;
}

export function writeSignedRecord(dir: string, record: AcceptanceRecord, secrets: Array<string | null>): WrittenRecord {
  const paths = installPaths(dir);
  if (!existsSync(paths.signerCert) || !existsSync(paths.signerKey)) {
    throw new HospitalApiError('ERR_INSTALL_NO_SIGNER', { dir: paths.root });
  }
  const stamp = record.testedAt.replace(/[-:]/g, '').replace('.', '');
  const json = join(paths.reports, `acceptance-${stamp}.json`);
  const [certPem, keyPem] = [readFileSync(paths.signerCert, 'utf8'), readFileSync(paths.signerKey, 'utf8')];
  return withChainLock(paths.reports, () => {
    const linked: AcceptanceRecord = { ...record, previousRecordSha256: chainHead(paths.reports) };
    const bytes = Buffer.from(serializeRecord(linked, secrets));
    const signature = signDetached(bytes, certPem, keyPem);
    // the signature first: a record file is the chain's head only once it can be verified
    writeFileAtomic(`${json}.p7s`, signature);
    writeFileAtomic(json, bytes);
    const markdown = json.replace(/\.json$/, '.md');
    writeFileAtomic(markdown, renderRecordMarkdown(linked, basename(json)));
    return { json, signature: `${json}.p7s`, markdown, record: linked };
  });
}
