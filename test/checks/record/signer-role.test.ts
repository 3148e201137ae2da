/**
 * The record signer and the audit seal (issue 46) are both CMS signers of the
 * install's CA, and the Hospital API holds the seal's key: a record signed
 * with it must never pass `record verify` (nor `--chain`), and a seal signed
 * with the record signer must never pass `audit verify`. The certificates are
 * issued as install issues them (src/install/tls.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate } from '../../../src/tls/pki.js';
import { signDetached } from '../../../src/tls/cms-sign.js';
import { AUDIT_SEAL_COMMON_NAME, verifyDetached } from '../../../src/tls/cms-verify.js';
import { issueAuditSeal } from '../../../src/install/tls.js';
import { openAuditLog } from '../../../src/api/audit/audit.js';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const ca = generateCa({ commonName: 'Role Test CA' });
const recordSigner = issueCertificate(ca, { commonName: 'Hospital API acceptance record signer', usage: 'signing' });
const seal = issueAuditSeal(ca);
const content = Buffer.from('{"format":"hospital-api/acceptance-record@1","result":"accepted","previous":null}\n');

describe('who may sign what', () => {
  it('the audit-seal certificate signs seals only, and only it signs seals', () => {
    const bySeal = signDetached(content, seal.certPem, seal.keyPem);
    const bySigner = signDetached(content, recordSigner.certPem, recordSigner.keyPem);
    expect(verifyDetached(content, bySeal, ca.certPem, 'record')).toMatchObject({
      ok: false,
      reason: `the signer is the audit-seal certificate (CN=${AUDIT_SEAL_COMMON_NAME}), which may not sign acceptance records`,
    });
    expect(verifyDetached(content, bySeal, ca.certPem, 'audit-seal').ok).toBe(true);
    expect(verifyDetached(content, bySigner, ca.certPem, 'record').ok).toBe(true);
    expect(verifyDetached(content, bySigner, ca.certPem, 'audit-seal').reason).toBe(`the signer is not the audit-seal certificate (its subject lacks CN=${AUDIT_SEAL_COMMON_NAME})`);
  });

  it('`record verify` refuses a record signed with the audit-seal key, alone and in a chain', async () => {
    const dir = tempDir();
    const reports = join(dir, 'reports');
    mkdirSync(reports);
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, ca.certPem);
    const forged = join(reports, 'acceptance-20260101T000000000Z.json');
    writeFileSync(forged, content);
    writeFileSync(`${forged}.p7s`, signDetached(content, seal.certPem, seal.keyPem));
    const one = await runCli(['record', 'verify', forged, '--ca', caFile]);
    expect(one.exitCode).not.toBe(0);
    expect(String(one.stderr)).toContain('which may not sign acceptance records');
    const chain = await runCli(['record', 'verify', '--chain', reports, '--ca', caFile, '--json']);
    expect(chain.exitCode).not.toBe(0);
    expect(String(chain.stdout) + String(chain.stderr)).toContain('which may not sign acceptance records');
    // the same record signed by the record signer passes
    writeFileSync(`${forged}.p7s`, signDetached(content, recordSigner.certPem, recordSigner.keyPem));
    const good = await runCli(['record', 'verify', forged, '--ca', caFile]);
    expect(good.exitCode, String(good.stderr)).toBe(0);
  });

  it('`audit verify` refuses seals signed with the record signer, and passes the same lines sealed by the audit seal', async () => {
    const dir = tempDir();
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, ca.certPem);
    const write = async (path: string, key: typeof seal): Promise<void> => {
      const log = openAuditLog(path, () => {}, { seal: key });
      await log.write({
        time: new Date().toISOString(), phase: 'end', requestId: 'req-1', callerRequestId: null, caller: '10.0.0.7', platformCareId: 'care-1',
        identifierSystem: 'urn:test', fhirPatientId: 'fhir-1', decision: 'granted', code: null, pages: 1, resources: 3, bytes: 1000, durationMs: 5, status: 200, aborted: false,
      });
      await log.close();
    };
    await write(join(dir, 'bad.log'), recordSigner);
    const bad = await runCli(['audit', 'verify', join(dir, 'bad.log'), '--ca', caFile]);
    expect(bad.exitCode).toBe(1);
    expect(String(bad.stdout)).toContain('foreign or altered seal: the signer is not the audit-seal certificate');
    await write(join(dir, 'good.log'), seal);
    const good = await runCli(['audit', 'verify', join(dir, 'good.log'), '--ca', caFile]);
    expect(good.exitCode, String(good.stdout)).toBe(0);
  });
});
