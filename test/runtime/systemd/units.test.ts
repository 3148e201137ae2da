/**
 * Issue 15: `hospital-api systemd` writes one hardened unit per component of a
 * native install, with the supervisor's own command lines, and systemd's own
 * checker (`systemd-analyze verify`, Debian's systemd package) accepts them,
 * including for an install directory whose path has a space. The checker is
 * shown to reject a broken unit, so its pass means something.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { BIN_PATH, COMPONENT_NODE_ARGS, componentSpecs } from '../../../src/runtime/native/components.js';
import { readInstallConfig, writeInstallConfig } from '../../../src/install-dir/install-config.js';
import { quoteArg } from '../../../src/runtime/systemd/units.js';

const analyze = spawnSync('systemd-analyze', ['--version']).status === 0;
if (!analyze) {
  process.stderr.write('test/runtime/systemd/units.test.ts: systemd-analyze not found: the systemd checks are SKIPPED (apt-get install systemd; .ci/run installs it)\n');
}
/** systemd's exposure score, in tenths (systemd-analyze security --threshold): today's units score 3.2. */
const EXPOSURE_LIMIT = 35;
const dir = join(tempDir('hapi-systemd-'), 'my site');
let unitsDir = '';
const SERVICES = ['hospital-api-fhir.service', 'hospital-api-gateway.service', 'hospital-api-api.service'];

function directives(text: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const x = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (x) m.set(x[1]!, [...(m.get(x[1]!) ?? []), x[2]!]);
  }
  return m;
}

/** systemd-analyze verify on files in `where`; exit status and output. */
function verify(where: string, names: string[]): { status: number | null; out: string } {
  const r = spawnSync('systemd-analyze', ['verify', '--man=no', ...names.map((n) => join(where, n))], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

beforeAll(async () => {
  const install = await runCli(['install', '--runtime', 'native', '--generate-ca', '--no-start', '--dir', dir, '--api-port', '19401', '--fhir-port', '19402',
    '--gateway-http-port', '19403', '--gateway-https-port', '19404', '--gateway-admin-port', '19405', '--metrics-port', '19406']);
  expect(install.exitCode, String(install.stderr)).toBe(0);
  const r = await runCli(['systemd', '--dir', dir, '--json']);
  expect(r.exitCode, String(r.stderr)).toBe(0);
  unitsDir = JSON.parse(String(r.stdout)).result.out;
});

afterAll(() => removeTempDirs());

describe('systemd units (issue 15)', () => {
  it('writes one unit per component with the supervisor\'s command line, a restart policy, hardening, a dedicated user and journald', () => {
    const specs = componentSpecs(dir, readInstallConfig(dir));
    expect(specs.map((s) => `hospital-api-${s.name}.service`)).toEqual(SERVICES);
    for (const spec of specs) {
      const d = directives(readFileSync(join(unitsDir, `hospital-api-${spec.name}.service`), 'utf8'));
      expect(d.get('ExecStart'), spec.name).toEqual([[process.execPath, ...COMPONENT_NODE_ARGS, BIN_PATH, ...spec.args].map(quoteArg).join(' ')]);
      expect(d.get('Restart')).toEqual(['always']);
      expect(d.get('User')).toEqual(['hospital-api']);
      expect(d.get('NoNewPrivileges')).toEqual(['yes']);
      expect(d.get('ProtectSystem')).toEqual(['strict']);
      expect(d.get('ReadWritePaths')).toEqual([quoteArg(dir)]);
      expect(d.get('CapabilityBoundingSet')).toEqual(['']);
      expect(d.get('StandardOutput')).toEqual(['journal']);
      expect(d.get('StandardError')).toEqual(['journal']);
      expect(d.get('WantedBy')).toEqual(['hospital-api.target']);
      expect(d.has('EnvironmentFile'), 'the API rereads its settings file; an EnvironmentFile would win over it').toBe(false);
    }
    // SIGHUP reloads: the API's key (rotate-key), the gateway's certificate (cert renew).
    expect(readFileSync(join(unitsDir, 'hospital-api-api.service'), 'utf8')).toContain('ExecReload=/bin/kill -HUP $MAINPID');
    expect(readFileSync(join(unitsDir, 'hospital-api-gateway.service'), 'utf8')).toContain('ExecReload=/bin/kill -HUP $MAINPID');
    expect(readFileSync(join(unitsDir, 'hospital-api.target'), 'utf8')).toContain(`Wants=${SERVICES.join(' ')}`);
  });

  it.skipIf(!analyze)('passes systemd-analyze verify, which rejects a broken unit', () => {
    const ok = verify(unitsDir, [...SERVICES, 'hospital-api.target']);
    expect(ok.status, ok.out).toBe(0);
    const broken = readFileSync(join(unitsDir, 'hospital-api-api.service'), 'utf8').replace(/^ExecStart=\S+/m, 'ExecStart=/nonexistent/node');
    writeFileSync(join(unitsDir, 'broken.service'), broken);
    const bad = verify(unitsDir, ['broken.service']);
    expect(bad.status, bad.out).not.toBe(0);
    expect(bad.out).toContain('/nonexistent/node');
  });

  it.skipIf(!analyze)(`scores at most ${EXPOSURE_LIMIT / 10} on systemd-analyze security (offline), which a unit without the hardening exceeds`, () => {
    const security = (where: string, name: string) => {
      const r = spawnSync('systemd-analyze', ['security', '--offline=yes', `--threshold=${EXPOSURE_LIMIT}`, '--no-pager', join(where, name)], { encoding: 'utf8' });
      return { status: r.status, out: `${r.stdout}${r.stderr}` };
    };
    for (const name of SERVICES) {
      const r = security(unitsDir, name);
      expect(r.status, r.out).toBe(0);
      expect(r.out).toMatch(/Overall exposure level for .*: \d/);
    }
    const weak = readFileSync(join(unitsDir, 'hospital-api-api.service'), 'utf8')
      .split('\n').filter((l) => !/^(NoNewPrivileges|ProtectSystem|CapabilityBoundingSet|ProtectKernel\w*)=/.test(l)).join('\n');
    writeFileSync(join(unitsDir, 'weak.service'), weak);
    expect(security(unitsDir, 'weak.service').status).not.toBe(0);
  });

  it('gives only CAP_NET_BIND_SERVICE, and only when a port is below 1024; refuses root, demo and docker installs', async () => {
    const config = readInstallConfig(dir);
    writeInstallConfig(dir, { ...config, ports: { ...config.ports, gatewayHttps: 443 } });
    const low = await runCli(['systemd', '--dir', dir, '--out', join(dir, 'low')]);
    expect(low.exitCode, String(low.stderr)).toBe(0);
    const gw = directives(readFileSync(join(dir, 'low', 'hospital-api-gateway.service'), 'utf8'));
    expect(gw.get('CapabilityBoundingSet')).toEqual(['CAP_NET_BIND_SERVICE']);
    expect(directives(readFileSync(join(dir, 'low', 'hospital-api-fhir.service'), 'utf8')).get('CapabilityBoundingSet')).toEqual(['']);
    if (analyze) expect(verify(join(dir, 'low'), ['hospital-api-gateway.service']).status).toBe(0);

    const root = await runCli(['systemd', '--dir', dir, '--user', 'root', '--json']);
    expect(root.exitCode).toBe(2);
    expect(JSON.parse(String(root.stdout)).error.code).toBe('ERR_SYSTEMD_OPTIONS');
    writeInstallConfig(dir, { ...config, demo: true });
    expect((await runCli(['systemd', '--dir', dir])).exitCode).toBe(2);
    writeInstallConfig(dir, { ...config, runtime: 'docker' });
    expect((await runCli(['systemd', '--dir', dir])).exitCode).toBe(2);
    writeInstallConfig(dir, config);
  });

  it('quotes arguments as systemd.syntax(7) reads them back', () => {
    expect(quoteArg('/opt/hospital api/x')).toBe('"/opt/hospital api/x"');
    expect(quoteArg('50%')).toBe('"50%%"');
    expect(quoteArg('$HOME')).toBe('"$$HOME"');
    expect(quoteArg('127.0.0.1:8443')).toBe('127.0.0.1:8443');
    expect(() => quoteArg('a\nb')).toThrow();
  });
});

describe('scheduled acceptance units (issue 46, install --verify-every)', () => {
  it('a one-shot `verify --scheduled` and its timer, the target wanting the timer only; none without the option', async () => {
    const before = readdirSync(unitsDir);
    expect(before.some((n) => n.includes('acceptance'))).toBe(false);
    const scheduled = join(tempDir('hapi-systemd-scheduled-'), 'site');
    const install = await runCli(['install', '--runtime', 'native', '--generate-ca', '--no-start', '--dir', scheduled, '--verify-every', '1h', '--api-port', '19411', '--fhir-port', '19412',
      '--gateway-http-port', '19413', '--gateway-https-port', '19414', '--gateway-admin-port', '19415', '--metrics-port', '19416']);
    expect(install.exitCode, String(install.stderr)).toBe(0);
    const r = await runCli(['systemd', '--dir', scheduled, '--json']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const out = JSON.parse(String(r.stdout)).result.out as string;
    const service = directives(readFileSync(join(out, 'hospital-api-acceptance.service'), 'utf8'));
    expect(service.get('Type')).toEqual(['oneshot']);
    expect(service.get('ExecStart')).toEqual([[process.execPath, ...COMPONENT_NODE_ARGS, BIN_PATH, 'verify', '--scheduled', '--dir', scheduled].map(quoteArg).join(' ')]);
    expect(service.has('Restart')).toBe(false);
    expect(service.has('WantedBy')).toBe(false);
    expect(service.get('User')).toEqual(['hospital-api']);
    // verify lists the host's addresses (netlink); the long-running components need no netlink
    expect(service.get('RestrictAddressFamilies')).toEqual(['AF_INET AF_INET6 AF_UNIX AF_NETLINK']);
    const timer = directives(readFileSync(join(out, 'hospital-api-acceptance.timer'), 'utf8'));
    expect(timer.get('OnUnitActiveSec')).toEqual(['3600s']);
    expect(timer.get('Unit')).toEqual(['hospital-api-acceptance.service']);
    const target = directives(readFileSync(join(out, 'hospital-api.target'), 'utf8'));
    expect(target.get('Wants')).toEqual([[...SERVICES, 'hospital-api-acceptance.timer'].join(' ')]);
    if (analyze) {
      const ok = verify(out, [...SERVICES, 'hospital-api-acceptance.service', 'hospital-api-acceptance.timer', 'hospital-api.target']);
      expect(ok.status, ok.out).toBe(0);
    }
  });
});
