/**
 * Writes a record to <install dir>/reports/: `acceptance-<time>.json`, its
 * detached signature `.json.p7s` and a Markdown copy `.md`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { installPaths } from '../../install-dir/layout.js';
import { serializeRecord, type AcceptanceRecord } from './build.js';
import { renderRecordMarkdown } from './markdown.js';
import { signDetached } from './sign.js';

export interface WrittenRecord {
  json: string;
  signature: string;
  markdown: string;
}

export function writeSignedRecord(dir: string, record: AcceptanceRecord, secrets: Array<string | null>): WrittenRecord {
  const paths = installPaths(dir);
  if (!existsSync(paths.signerCert) || !existsSync(paths.signerKey)) {
    throw new HospitalApiError('ERR_INSTALL_NO_SIGNER', { dir: paths.root });
  }
  const stamp = record.testedAt.replace(/[-:]/g, '').replace('.', '');
  const json = join(paths.reports, `acceptance-${stamp}.json`);
  const bytes = Buffer.from(serializeRecord(record, secrets));
  const signature = signDetached(bytes, readFileSync(paths.signerCert, 'utf8'), readFileSync(paths.signerKey, 'utf8'));
  writeFileAtomic(json, bytes);
  writeFileAtomic(`${json}.p7s`, signature);
  const markdown = json.replace(/\.json$/, '.md');
  writeFileAtomic(markdown, renderRecordMarkdown(record, basename(json)));
  return { json, signature: `${json}.p7s`, markdown };
}
