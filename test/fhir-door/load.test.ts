/**
 * `fhir load` through the FHIR door of a docker installation (issue 24), without an engine: the real
 * native FHIR server stands in for HAPI, the real door in front of it on the install's FHIR port, the
 * real CLI. `--dir` sends the install's door token; a load without it is refused with an error that
 * names --dir, and the token is printed nowhere.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeInstallConfig } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { startFhirDoor, type FhirDoor } from '../../src/fhir-door/server.js';
import { runCli } from '../helpers/cli.js';
import { installConfig } from '../helpers/install-config.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { fhirJson, startFhir, type RunningFhir } from '../helpers/fhir-server.js';

const TOKEN = 'site-door-token-0123456789abcdefghijkl';
let fhir: RunningFhir;
let door: FhirDoor;
let site: string;
let data: string;

function dockerSite(port: number, token: string | null): string {
  const dir = tempDir('fhir-door-site-');
  writeInstallConfig(dir, installConfig({ runtime: 'docker', hosts: ['127.0.0.1'], ports: { fhir: port }, docker: { images: { kong: 'k', hapi: 'h', postgres: 'p', api: null }, bindAddress: '127.0.0.1', fhirBindAddress: '127.0.0.1' } }));
  const p = installPaths(dir);
  mkdirSync(p.secrets, { recursive: true, mode: 0o700 });
  if (token !== null) writeFileSync(join(p.secrets, 'fhir-door-token'), `${token}\n`, { mode: 0o600 });
  return dir;
}

beforeAll(async () => {
  fhir = await startFhir(tempDir('fhir-door-data-'));
  door = await startFhirDoor({ host: '127.0.0.1', port: 0, upstream: new URL(fhir.base).origin, token: TOKEN });
  site = dockerSite(Number(new URL(door.url).port), TOKEN);
  data = tempDir();
  writeFileSync(join(data, 'org.ndjson'), JSON.stringify({ resourceType: 'Organization', id: 'through-the-door', name: 'Through the door' }) + '\n');
});

afterAll(async () => {
  await door?.close();
  await fhir?.stop();
  removeTempDirs();
});

describe('fhir load through the FHIR door', () => {
  it('--dir sends the installation\'s door token: without --url, and with a --url at the same address', async () => {
    const loaded = await runCli(['--json', 'fhir', 'load', '--dir', site, '--state', join(data, 'a.json'), join(data, 'org.ndjson')]);
    expect(loaded.exitCode, String(loaded.stderr)).toBe(0);
    expect(JSON.parse(String(loaded.stdout)).result).toMatchObject({ bundles: 1, failed: 0 });
    expect((await fhirJson(`${fhir.base}/Organization/through-the-door`)).body.name).toBe('Through the door');
    const same = await runCli(['--json', 'fhir', 'load', '--dir', site, '--url', `${door.url}/fhir`, '--state', join(data, 'b.json'), join(data, 'org.ndjson')]);
    expect(same.exitCode, String(same.stderr)).toBe(0);
    expect(`${loaded.stdout}${loaded.stderr}${same.stdout}${same.stderr}`).not.toContain(TOKEN);
  });

  it('without the token (another address, no installation, or a wrong token) the door refuses it: ERR_FHIR_LOAD_UNAUTHORIZED naming --dir', async () => {
    const noSite = tempDir();
    const wrong = dockerSite(Number(new URL(door.url).port), 'another-sites-token-0123456789abcdef');
    const runs = [
      await runCli(['--json', 'fhir', 'load', '--url', `${door.url}/fhir`, '--state', join(data, 'c.json'), join(data, 'org.ndjson')], { env: { HOSPITAL_API_DIR: noSite } }),
      await runCli(['--json', 'fhir', 'load', '--dir', wrong, '--state', join(data, 'd.json'), join(data, 'org.ndjson')]),
    ];
    for (const run of runs) {
      expect(run.exitCode, String(run.stderr)).toBe(2);
      const error = JSON.parse(String(run.stdout)).error as { code: string; message: string; hint: string };
      expect(error.code).toBe('ERR_FHIR_LOAD_UNAUTHORIZED');
      expect(error.message).toContain('HTTP 401');
      expect(error.hint).toContain('--dir');
      expect(`${run.stdout}${run.stderr}`).not.toContain(TOKEN);
    }
    // the table form says it to a person too
    const table = await runCli(['fhir', 'load', '--dir', wrong, '--state', join(data, 'e.json'), join(data, 'org.ndjson')]);
    expect(String(table.stderr)).toContain('--dir');
  });
});
