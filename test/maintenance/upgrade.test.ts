/**
 * Issue 15: upgrade in place from an install directory in the previous
 * release's format (format 1: install.json as commit 6df6f35 wrote it, before
 * this release's guarantees: secret files 0600, settings naming this
 * directory). The real CLI refuses to run the old directory, takes a backup,
 * migrates it; a run killed part-way is rolled back (or rolled back and
 * redone); afterwards the stack comes up, verify passes and every record reads
 * back equal.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs } from '../helpers/tmp.js';
import { startCli } from '../helpers/cli.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { updateEnvValues } from '../../src/install/files.js';
import { startNativeSite, type NativeSite, type PatientsBody } from '../helpers/native-site.js';
import { tokenOf } from '../helpers/patients.js';

const PASS = { HOSPITAL_API_BACKUP_PASSPHRASE: 'upgrade passphrase for the test' };
const STOP_AT_LINE = pathToFileURL(join(import.meta.dirname, 'stop-at-line.mjs')).href;

/**
 * Runs the real `hospital-api upgrade` and SIGKILLs it right after it reports `step` done,
 * before it can take another step: stop-at-line.mjs (preloaded) stops the process on
 * that progress line, and this harness, watching stderr for it, kills the process.
 */
async function upgradeKilledAfter(step: string): Promise<void> {
  const line = `  ${step}: done`;
  const child = startCli(['upgrade', '--dir', site.dir], {
    env: { ...PASS, STOP_AT_LINE: line, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${STOP_AT_LINE}`.trim() },
    timeout: 120_000,
  });
  let err = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    err += String(chunk);
    if (err.includes(line)) child.kill('SIGKILL');
  });
  const result = await child;
  expect(err, 'the upgrade reported the step done').toContain(line);
  expect(result.signal, err).toBe('SIGKILL');
}
let site: NativeSite;
let paths: ReturnType<typeof installPaths>;
const records = new Map<string, string[]>();
let formatOne = '';

const normal = (body: PatientsBody): string[] => (body.resources ?? []).map((e) => JSON.stringify(e.resource)).sort();

/** Content and mode of every file the upgrade may touch (backups/, logs/, run/ left out). */
function digest(): string {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(paths.root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      if (['backups', 'logs', 'run', 'generated'].includes(r)) continue;
      const st = statSync(join(paths.root, r));
      if (st.isDirectory()) walk(r);
      else out.push(`${r} ${(st.mode & 0o777).toString(8)} ${createHash('sha256').update(readFileSync(join(paths.root, r))).digest('hex')}`);
    }
  };
  walk('');
  return out.join('\n');
}

beforeAll(async () => {
  site = await startNativeSite({ seed: 'day2-upgrade', patients: 2, sizes: '20-60' });
  paths = installPaths(site.dir);
  for (const p of site.patients) {
    const r = await site.post(p.careId, tokenOf(site.tokens, p.careId));
    expect(r.status).toBe(200);
    records.set(p.careId, normal(r.body));
  }
  expect((await site.cli(['down'])).code).toBe(0);
  // The previous release's format: the same install.json shape with formatVersion 1 (git show 6df6f35:src/runtime/install-config.ts),
  // secret files as an older or hand-kept directory may have them, and settings naming where the directory used to be.
  const config = JSON.parse(readFileSync(paths.installJson, 'utf8'));
  expect(config.formatVersion).toBe(2);
  writeFileSync(paths.installJson, JSON.stringify({ ...config, formatVersion: 1, toolkitVersion: '0.0.9' }, null, 2) + '\n');
  updateEnvValues(paths.apiEnv, { FHIR_CA_FILE: '/srv/old-place/tls/ca.pem', AUDIT_LOG: '/srv/old-place/logs/audit.log' });
  chmodSync(paths.apiEnv, 0o644);
  chmodSync(paths.gatewayKey, 0o644);
  formatOne = digest();
});

afterAll(async () => {
  await site?.close();
  removeTempDirs();
});

describe('upgrade in place (issue 15)', () => {
  it('a format-1 directory is refused by every command but upgrade, which needs a backup key before it changes anything', async () => {
    const status = await site.cli(['status', '--json']);
    expect(status.code).toBe(3);
    expect(JSON.parse(status.out).error.code).toBe('ERR_UPGRADE_FORMAT');
    expect(JSON.parse(status.out).error.hint).toContain('hospital-api upgrade');
    const up = await site.cli(['up', '--json']);
    expect(up.code).toBe(3);
    const noKey = await site.cli(['upgrade', '--json'], {});
    expect(JSON.parse(noKey.out).error.code).toBe('ERR_BACKUP_PASSPHRASE');
    expect(digest()).toBe(formatOne);
  });

  it('a run killed part-way leaves a journal; --rollback restores the directory exactly', async () => {
    await upgradeKilledAfter('settings for this directory');
    expect(existsSync(join(paths.root, '.upgrade', 'journal.json'))).toBe(true);
    expect(digest(), 'the run was killed after changing files').not.toBe(formatOne);
    expect(JSON.parse(readFileSync(paths.installJson, 'utf8')).formatVersion).toBe(1);
    const back = await site.cli(['upgrade', '--rollback'], PASS);
    expect(back.code, back.err).toBe(0);
    expect(existsSync(join(paths.root, '.upgrade'))).toBe(false);
    expect(digest()).toBe(formatOne);
  });

  it('killed again, a plain rerun rolls back and completes: format 2, a backup first, secrets 0600, settings fixed; up, verify and every record equal', async () => {
    await upgradeKilledAfter('secret files 0600');
    expect(existsSync(join(paths.root, '.upgrade', 'journal.json'))).toBe(true);
    expect(JSON.parse(readFileSync(paths.installJson, 'utf8')).formatVersion).toBe(1);
    const t0 = Date.now();
    const run = await site.cli(['upgrade', '--json'], PASS);
    const seconds = (Date.now() - t0) / 1000;
    expect(run.code, run.err).toBe(0);
    console.log(`upgrade (with its backup): ${seconds.toFixed(1)} s`);
    expect(run.err).toContain('rolling it back first');
    const result = JSON.parse(run.out).result as { from: number; to: number; backup: string; steps: string[] };
    expect([result.from, result.to]).toEqual([1, 2]);
    expect(statSync(result.backup).mode & 0o777).toBe(0o600);
    expect(result.backup.startsWith(join(paths.root, 'backups', 'pre-upgrade-format-1-'))).toBe(true);

    const config = JSON.parse(readFileSync(paths.installJson, 'utf8'));
    expect(config.formatVersion).toBe(2);
    expect(config.upgrades).toEqual([expect.objectContaining({ from: 1, to: 2, backup: result.backup })]);
    expect(statSync(paths.apiEnv).mode & 0o777).toBe(0o600);
    expect(statSync(paths.gatewayKey).mode & 0o777).toBe(0o600);
    const env = readEnvFile(paths.apiEnv);
    expect(env.FHIR_CA_FILE).toBe(paths.caCert);
    expect(env.AUDIT_LOG).toBe(join(paths.logs, 'audit.log'));
    expect(env.FHIR_API_KEY).toBeTruthy();

    const again = await site.cli(['upgrade', '--json'], PASS);
    expect(JSON.parse(again.out).result.backup).toBe(null); // already current: nothing to do

    const up = await site.cli(['up']);
    expect(up.code, up.err).toBe(0);
    const verify = await site.cli(['verify']);
    expect(verify.code, verify.out + verify.err).toBe(0);
    for (const [careId, resources] of records) {
      const r = await site.post(careId, tokenOf(site.tokens, careId));
      expect(r.status).toBe(200);
      expect(normal(r.body), careId).toEqual(resources);
    }
  });
});
