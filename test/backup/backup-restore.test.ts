/**
 * Issue 15: backup → wipe → restore → verify on the real native stack, through
 * the real CLI. The backup is taken while the API serves platform requests and
 * while the FHIR server takes writes; after the install directory is deleted
 * and restored, verify passes and every patient record reads back equal.
 * Damaged archives, a wrong passphrase and a non-empty directory change nothing.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { runCli } from '../helpers/cli.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { inspectFhirStore } from '../../src/fhir/store/online-backup.js';
import { loadLoop, startNativeSite, type NativeSite, type PatientsBody } from '../helpers/native-site.js';
import { tokenOf } from '../helpers/patients.js';

const PASS = { HOSPITAL_API_BACKUP_PASSPHRASE: 'correct horse battery staple 15' };
let site: NativeSite;
let archive = '';
let backedUpResources = -1;
const records = new Map<string, string[]>();

beforeAll(async () => {
  site = await startNativeSite({ seed: 'day2-backup', patients: 3, sizes: '20-80' });
});

afterAll(async () => {
  await site?.close();
  removeTempDirs();
});

/** A record as a sorted list of its resources, so page order does not matter. */
const normal = (body: PatientsBody): string[] => (body.resources ?? []).map((e) => JSON.stringify(e.resource)).sort();

async function readAllRecords(): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const p of site.patients) {
    const r = await site.post(p.careId, tokenOf(site.tokens, p.careId));
    expect(r.status).toBe(200);
    out.set(p.careId, normal(r.body));
  }
  return out;
}

/** Writes outside every patient compartment while the backup runs. */
function writer(): { stop(): Promise<number> } {
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      const res = await request(`http://127.0.0.1:${site.ports.fhir}/fhir/Organization`, {
        method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Organization', name: `org ${n}` }),
      });
      await res.body.text();
      if (res.statusCode === 201) n++;
    }
  })();
  return { async stop() { running = false; await loop; return n; } };
}

function expectNothingLeft(target: string): void {
  expect(existsSync(target) ? readdirSync(target) : [], `${target} must stay empty`).toEqual([]);
  expect(readdirSync(dirname(target)).filter((f) => f.startsWith('.hospital-api-restore-')), 'staging left behind').toEqual([]);
}

describe('backup and restore (issue 15)', () => {
  it('backs up while serving: every platform request answers 200, writes go on, the archive is 0600 and holds no secret or record in clear', async () => {
    for (const [k, v] of await readAllRecords()) records.set(k, v);
    // serve seals the audit log when it stops (issue 46): the chain state beside the log then holds that seal
    expect((await site.cli(['down'])).code).toBe(0);
    expect((await site.cli(['up'])).code).toBe(0);
    expect(existsSync(join(installPaths(site.dir).logs, 'audit.log.chain'))).toBe(true);
    const out = join(tempDir('hapi-backup-out-'), 'site.tar');
    const load = loadLoop(site, 2);
    const writes = writer();
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    const backup = await site.cli(['backup', '--out', out, '--json'], PASS);
    const seconds = (Date.now() - t0) / 1000;
    const written = await writes.stop();
    const results = await load.stop();
    expect(backup.code, backup.err).toBe(0);
    expect(results.filter((r) => r.status !== 200 || r.error)).toEqual([]);
    expect(written, 'FHIR writes during the backup').toBeGreaterThan(0);
    archive = out;
    backedUpResources = (JSON.parse(backup.out).result as { fhir: { resources: number } }).fhir.resources;
    console.log(`backup: ${seconds.toFixed(1)} s, ${statSync(out).size} bytes, ${results.length} platform requests and ${written} FHIR writes meanwhile`);

    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(readdirSync(dirname(out))).toEqual(['site.tar']);
    const result = JSON.parse(backup.out).result as { parts: Array<{ path: string; kind: string; sha256: string }>; fhir: { resources: number } };
    expect(result.parts.map((p) => p.path)).toEqual(expect.arrayContaining([
      'install.json', 'hospital-api.env', 'tls/ca.pem', 'tls/ca.key', 'tls/gateway.pem', 'tls/gateway.key', 'tls/record-signer.key',
      'gateway/state.json', 'fhir/fhir.sqlite', 'logs/audit.log', 'logs/audit.log.chain',
    ]));
    expect(backup.err).toContain('FHIR store');

    const bytes = readFileSync(out);
    const key = readEnvFile(installPaths(site.dir).apiEnv).FHIR_API_KEY!;
    for (const secret of [key, 'PRIVATE KEY', 'FHIR_API_KEY', site.patients[0]!.careId, 'SQLite format 3', '"consumers"']) {
      expect(bytes.includes(Buffer.from(secret)), `"${secret.slice(0, 12)}…" in clear`).toBe(false);
    }
    expect(bytes.includes(Buffer.from('"format": "hospital-api-backup"'))).toBe(true); // the manifest is in clear
  });

  it('wipe → restore → up → verify passes and every patient record reads back equal', async () => {
    expect((await site.cli(['down'])).code).toBe(0);
    // the API's audit-seal key (issue 46) is carried like the other keys, so restored logs go on under the same seal
    const sealKey = readFileSync(installPaths(site.dir).auditSealKey, 'utf8');
    rmSync(site.dir, { recursive: true, force: true });
    const t0 = Date.now();
    const restore = await site.cli(['restore', archive], PASS);
    console.log(`restore: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(restore.code, restore.err).toBe(0);
    const store = inspectFhirStore(join(installPaths(site.dir).fhirData, 'fhir.sqlite'));
    // One consistent snapshot taken while writes went on: the store holds exactly what the manifest counted.
    expect(store.resources).toBe(backedUpResources);
    expect(store.resources).toBeGreaterThan(0);
    expect(statSync(installPaths(site.dir).gatewayKey).mode & 0o777).toBe(0o600);
    expect(statSync(installPaths(site.dir).apiEnv).mode & 0o777).toBe(0o600);
    expect(statSync(installPaths(site.dir).auditSealKey).mode & 0o777).toBe(0o600);
    expect(readFileSync(installPaths(site.dir).auditSealKey, 'utf8')).toBe(sealKey);

    const up = await site.cli(['up']);
    expect(up.code, up.err).toBe(0);
    const verify = await site.cli(['verify']);
    expect(verify.code, verify.out + verify.err).toBe(0);
    const after = await readAllRecords();
    expect(after.size).toBe(records.size);
    for (const [careId, resources] of records) expect(after.get(careId), careId).toEqual(resources);
    // the restored audit log and its chain state: still one chain, sealed by the install's CA, going on after the restore
    const audit = await site.cli(['audit', 'verify', '--json']);
    expect(audit.code, audit.out).toBe(0);
    expect(JSON.parse(audit.out).result).toMatchObject({ broken: 0, sealsChecked: true });
  });

  it('restores into another directory (a new machine or path): the settings follow it, and the old path is not needed', async () => {
    expect((await site.cli(['down'])).code).toBe(0);
    const away = `${site.dir}-away`;
    renameSync(site.dir, away);
    const other = join(tempDir('hapi-restore-elsewhere-'), 'site');
    try {
      const r = await runCli(['restore', archive, '--dir', other], { env: PASS });
      expect(r.exitCode, String(r.stderr)).toBe(0);
      const env = readEnvFile(installPaths(other).apiEnv);
      expect(env.FHIR_CA_FILE).toBe(installPaths(other).caCert);
      expect(env.AUDIT_LOG).toBe(join(installPaths(other).logs, 'audit.log'));
      expect((await runCli(['up', '--dir', other])).exitCode).toBe(0);
      const verify = await runCli(['verify', '--dir', other]);
      expect(verify.exitCode, String(verify.stdout) + String(verify.stderr)).toBe(0);
      const after = await readAllRecords();
      for (const [careId, resources] of records) expect(after.get(careId), careId).toEqual(resources);
    } finally {
      await runCli(['down', '--dir', other]);
      renameSync(away, site.dir);
    }
    expect((await site.cli(['up'])).code).toBe(0);
  });

  it('a wrong passphrase, a damaged or truncated archive, or a non-empty directory change nothing', async () => {
    const base = tempDir('hapi-restore-bad-');
    const target = join(base, 'site');
    const restore = async (file: string, env: Record<string, string> = PASS, dir = target) => {
      const r = await runCli(['restore', file, '--json', '--dir', dir], { env });
      const out = String(r.stdout);
      return { code: r.exitCode, error: out ? (JSON.parse(out).error?.code as string) : String(r.stderr) };
    };
    expect(await restore(archive, { HOSPITAL_API_BACKUP_PASSPHRASE: 'not the passphrase at all' })).toEqual({ code: 1, error: 'ERR_RESTORE_DECRYPT' });
    expectNothingLeft(target);

    const bytes = readFileSync(archive);
    const flipped = Buffer.from(bytes);
    const at = Math.floor(bytes.length / 2); // inside the FHIR store's ciphertext, most of the archive
    flipped[at] = flipped[at]! ^ 0x01;
    writeFileSync(join(base, 'flipped.tar'), flipped);
    expect(await restore(join(base, 'flipped.tar'))).toEqual({ code: 1, error: 'ERR_RESTORE_BAD_ARCHIVE' });
    expectNothingLeft(target);

    writeFileSync(join(base, 'short.tar'), bytes.subarray(0, Math.floor(bytes.length / 2)));
    expect(await restore(join(base, 'short.tar'))).toEqual({ code: 1, error: 'ERR_RESTORE_BAD_ARCHIVE' });
    expectNothingLeft(target);

    // The manifest itself altered (a part's recorded size): its HMAC no longer matches.
    const text = bytes.toString('latin1');
    const i = text.indexOf('"bytes": ');
    const edited = Buffer.from(text.slice(0, i) + '"bytes": 9' + text.slice(i + 10), 'latin1');
    writeFileSync(join(base, 'edited.tar'), edited);
    expect((await restore(join(base, 'edited.tar'))).error).toBe('ERR_RESTORE_BAD_ARCHIVE');
    expectNothingLeft(target);

    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'keep.txt'), 'mine');
    expect(await restore(archive)).toEqual({ code: 2, error: 'ERR_RESTORE_NOT_EMPTY' });
    expect(readdirSync(target)).toEqual(['keep.txt']);
  });

  it('backs up and restores with a key file instead of a passphrase', async () => {
    const base = tempDir('hapi-keyfile-');
    const keyFile = join(base, 'backup.key');
    writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
    const out = join(base, 'k.tar');
    const b = await site.cli(['backup', '--out', out, '--key-file', keyFile], {});
    expect(b.code, b.err).toBe(0);
    const r = await runCli(['restore', out, '--key-file', keyFile, '--dir', join(base, 'site')]);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(existsSync(join(base, 'site', 'fhir', 'fhir.sqlite'))).toBe(true);
    // Without any key source (no terminal in a test) it refuses before reading anything.
    const none = await site.cli(['backup', '--out', join(base, 'n.tar'), '--json'], {});
    expect(JSON.parse(none.out).error.code).toBe('ERR_BACKUP_PASSPHRASE');
    expect(existsSync(join(base, 'n.tar'))).toBe(false);
  });
});
