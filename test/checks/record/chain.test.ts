/**
 * Issue 46, the record chain: each record written names the SHA-256 of the one before it in the same
 * folder, inside what is signed; `record verify --chain <folder>` (the real CLI) checks every signature
 * and link, and names the record where a record was removed, altered, reordered or brought in from
 * another install. Real files, real CMS signatures.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { copyFileSync, cpSync, mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildRecord, type RecordInput } from '../../../src/checks/record/build.js';
import { verifyChain, withChainLock } from '../../../src/checks/record/chain.js';
import { recordFiles } from '../../../src/install-dir/reports.js';
import { writeSignedRecord } from '../../../src/checks/record/write.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { describeCertificate } from '../../../src/tls/inspect.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { runCli } from '../../helpers/cli.js';
import { installConfig } from '../../helpers/install-config.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const config = installConfig({ runtime: 'native', hosts: ['gw.example'] });

/** An install directory with its own CA and record signer. */
function install(): { dir: string; ca: KeyAndCert } {
  const ca = generateCa({ commonName: 'Chain Test CA' });
  const signer = issueCertificate(ca, { commonName: 'chain signer', usage: 'signing' });
  const dir = join(tempDir(), 'inst');
  const p = installPaths(dir);
  mkdirSync(p.tls, { recursive: true });
  writeFileSync(p.caCert, ca.certPem);
  writeFileSync(p.signerCert, signer.certPem);
  writeFileSync(p.signerKey, signer.keyPem, { mode: 0o600 });
  return { dir, ca };
}

function input(ca: KeyAndCert, minute: number, accepted = true): RecordInput {
  return {
    config, installDir: '/srv/hospital-api', testedAt: new Date(Date.UTC(2026, 10, 1, 9, minute, 0, 0)), accepted,
    gatewayCertificate: null, ca: { path: 'ca.pem', certificate: describeCertificate(new X509Certificate(ca.certPem)) },
    versions: [], checks: [],
  };
}

/** Four records written one after another, as four verify runs write them. */
function chainOfFour(): { dir: string; reports: string; names: string[]; ca: KeyAndCert } {
  const { dir, ca } = install();
  for (const minute of [1, 2, 3, 4]) writeSignedRecord(dir, buildRecord(input(ca, minute, minute !== 3)), []);
  const reports = installPaths(dir).reports;
  return { dir, reports, names: recordFiles(reports), ca };
}

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const move = (reports: string, from: string, to: string) => {
  renameSync(join(reports, from), join(reports, to));
  renameSync(join(reports, `${from}.p7s`), join(reports, `${to}.p7s`));
};

describe('the record chain', () => {
  it('each record names the SHA-256 of the one written before it, the first none; the chain verifies', () => {
    const { reports, names, ca } = chainOfFour();
    expect(names).toHaveLength(4);
    const previous = names.map((n) => (JSON.parse(readFileSync(join(reports, n), 'utf8')) as { previousRecordSha256: string | null }).previousRecordSha256);
    expect(previous).toEqual([null, sha(join(reports, names[0]!)), sha(join(reports, names[1]!)), sha(join(reports, names[2]!))]);
    const report = verifyChain(reports, ca.certPem);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.records.map((r) => [r.signature, r.link])).toEqual([['ok', 'first'], ['ok', 'ok'], ['ok', 'ok'], ['ok', 'ok']]);
  });

  it('an edited record: its signature fails, and the next one names a record that is no longer there', () => {
    const { reports, names, ca } = chainOfFour();
    const path = join(reports, names[2]!);
    writeFileSync(path, readFileSync(path, 'utf8').replace('"result": "rejected"', '"result": "accepted"'));
    const report = verifyChain(reports, ca.certPem);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.stringMatching(new RegExp(`^${names[2]}: signature .*altered`)),
      expect.stringMatching(new RegExp(`^${names[3]}: names a record that is not in the folder`)),
    ]);
  });

  it('a record removed from the middle: the one after it names a record that is not in the folder', () => {
    const { reports, names, ca } = chainOfFour();
    rmSync(join(reports, names[1]!));
    rmSync(join(reports, `${names[1]}.p7s`));
    const report = verifyChain(reports, ca.certPem);
    expect(report.problems).toEqual([`${names[2]}: names a record that is not in the folder: one was removed or altered before it (${names[0]} is the one before it now)`]);
  });

  it('the first record removed: the new first names a record that is not there', () => {
    const { reports, names, ca } = chainOfFour();
    rmSync(join(reports, names[0]!));
    rmSync(join(reports, `${names[0]}.p7s`));
    expect(verifyChain(reports, ca.certPem).problems).toEqual([`${names[1]}: names a record that is not in the folder (removed before it)`]);
  });

  it('two records swapped (renamed into each other’s place): reordered, naming both', () => {
    const { reports, names, ca } = chainOfFour();
    move(reports, names[1]!, 'swap.tmp');
    move(reports, names[2]!, names[1]!);
    move(reports, 'swap.tmp', names[2]!);
    const problems = verifyChain(reports, ca.certPem).problems;
    expect(problems.some((p) => p.startsWith(`${names[1]}:`) && p.includes('reordered'))).toBe(true);
    expect(problems.some((p) => p.startsWith(`${names[2]}:`) && p.includes('reordered'))).toBe(true);
  });

  it('a record from another install (signed under its CA) put into the folder: foreign', () => {
    const { reports, names, ca } = chainOfFour();
    const other = install();
    const written = writeSignedRecord(other.dir, buildRecord(input(other.ca, 5)), []);
    copyFileSync(written.json, join(reports, 'acceptance-20261101T090500000Z.json'));
    copyFileSync(written.signature, join(reports, 'acceptance-20261101T090500000Z.json.p7s'));
    const problems = verifyChain(reports, ca.certPem).problems;
    expect(problems).toEqual([
      expect.stringMatching(/^acceptance-20261101T090500000Z\.json: signature .*foreign/),
      `acceptance-20261101T090500000Z.json: names no previous record, though ${names[3]} comes before it (reordered or foreign)`,
    ]);
  });

  it("a record's signature file dropped: named", () => {
    const { reports, names, ca } = chainOfFour();
    rmSync(join(reports, `${names[3]}.p7s`));
    expect(verifyChain(reports, ca.certPem).problems).toEqual([`${names[3]}: signature no signature file (.p7s) (altered, or signed under another CA: foreign)`]);
  });

  it('record verify --chain (the CLI): exit 0 and every record on an intact folder; exit 1 naming the record on a broken one', async () => {
    const { dir, reports, names } = chainOfFour();
    const good = await runCli(['record', 'verify', '--chain', reports, '--json']);
    expect(good.exitCode, String(good.stderr)).toBe(0);
    const doc = JSON.parse(String(good.stdout)) as { ok: boolean; result: { records: Array<{ record: string; link: string }>; ca: string } };
    expect(doc.result.records.map((r) => r.record)).toEqual(names);
    expect(doc.result.ca).toBe(installPaths(dir).caCert);
    const broken = join(tempDir(), 'copy');
    cpSync(reports, broken, { recursive: true });
    rmSync(join(broken, names[1]!));
    const bad = await runCli(['record', 'verify', '--chain', broken, '--dir', dir, '--json']);
    expect(bad.exitCode).toBe(1);
    const err = JSON.parse(String(bad.stdout)) as { ok: boolean; error: { code: string; message: string } };
    expect(err.error.code).toBe('ERR_INSTALL_RECORD_CHAIN_BROKEN');
    expect(err.error.message).toContain(`${names[2]}: names a record that is not in the folder`);
    const usage = await runCli(['record', 'verify', join(reports, names[0]!), '--chain', reports]);
    expect(usage.exitCode).toBe(2);
  });

  it('a lock left by a run that died is taken over; a held one makes the writer wait', () => {
    const { reports } = chainOfFour();
    const lock = join(reports, '.chain.lock');
    mkdirSync(lock);
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(lock, old, old);
    expect(withChainLock(reports, () => 'written')).toBe('written');
    expect(() => readFileSync(lock)).toThrow(/ENOENT/);
  });
});
