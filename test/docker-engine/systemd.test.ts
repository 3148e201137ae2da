/**
 * Issue 15, "systemd for production native installs", under a real systemd:
 * a Debian container whose PID 1 is Debian's systemd (test/docker-engine/
 * images/systemd), with Node and the toolkit from the hospital-api image. In
 * it, as a hospital's administrator would on a server: `install --runtime
 * native`, `consumer create --write-env`, `systemd --out /etc/systemd/system`,
 * `down`, a dedicated user owning the install, `systemctl enable --now
 * hospital-api.target`, `systemd --managed`. Then:
 * - each component runs as that user, with the sandbox the units ask for in
 *   effect on the live process (no new privileges, no capabilities, the file
 *   system read-only but for the install directory, a private /tmp);
 * - `verify` passes, and a record flows from the platform stand-in through the
 *   API, the gateway (verified HTTPS) and the FHIR server;
 * - a killed component is restarted by systemd (Restart=always) and its lines
 *   are in the journal;
 * - `consumer rotate-key --write-env` and `cert renew` go through systemctl
 *   (SIGHUP to the unit's main pid; `systemctl reload`), nothing restarts;
 * - `down` and `up` stop and start hospital-api.target.
 *
 * The container shares the host's network (the tier's engine has no bridge), so
 * the ports are free ones of this host and the test reaches them on loopback.
 * systemd needs CAP_SYS_ADMIN (to mount its cgroups and the units' namespaces)
 * and the host's /sys/fs/cgroup (`--privileged` is refused inside this
 * sandbox); the test's own nsenter into the components needs CAP_SYS_PTRACE. Without an engine every test is skipped with one plain line.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { installArgs, type InstallArgsOptions } from '../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { testPorts } from '../helpers/native-install.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { API_IMAGE, formatTimings, prepareImages, REAL, REPO, startSystemdHost, syntheticIds, type Timings, unitShowIn, until } from './site.js';
import { postPatient, tokenOf, type RecordEntry } from '../helpers/patients.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

const IMAGE = TIER_IMAGES.systemdHost;
const NAME = `hapi-systemd-${process.pid}`;
const DIR = '/srv/hospital-api';
const USER = 'hospital-api';
const TOOLKIT = ['node', '/opt/hospital-api/bin/hospital-api.js'];
const SEED = 'docker-systemd';
const SIZES = '20-60';
const COMPONENTS = ['fhir', 'gateway', 'api'] as const;
const timings: Timings = {};
const started = Date.now();
let ports: Record<'api' | 'fhir' | 'gatewayHttp' | 'gatewayHttps' | 'gatewayAdmin' | 'metrics' | 'platform', number>;

/** A command in the host container, as root. */
async function inHost(args: string[], options: { allowFail?: boolean; timeout?: number } = {}) {
  return docker(['exec', NAME, ...args], { allowFail: options.allowFail ?? true, timeout: options.timeout ?? 300_000 });
}

/** The toolkit in the host container, on the install directory. */
async function toolkit(args: string[]) {
  const t0 = Date.now();
  const r = await inHost([...TOOLKIT, ...args, '--dir', DIR]);
  const name = args.slice(0, args[0] === 'consumer' || args[0] === 'cert' ? 2 : 1).join(' ');
  timings[name] = (timings[name] ?? 0) + (Date.now() - t0);
  return r;
}

/** The install command of this site (its choices; a rerun changes only what it adds). */
const siteInstall = (): InstallArgsOptions => ({ runtime: 'native', host: '127.0.0.1', generateCa: false, platformUrl: `http://127.0.0.1:${ports.platform}`, ports });

/** The component's unit in the container. */
const unitShow = (component: string) => unitShowIn(NAME, component);


async function healthy(): Promise<boolean> {
  try {
    const res = await request(`http://127.0.0.1:${ports.api}/api/health-check`, { headersTimeout: 3000, bodyTimeout: 3000 });
    return res.statusCode === 200 && (await res.body.text()) === '{}';
  } catch {
    return false;
  }
}

type Entry = RecordEntry;

const dataset = generateDataset({ patients: 2, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];

describe.skipIf(!engine)('native install under a real systemd (issue 15)', () => {
  beforeAll(async () => {
    const t0 = Date.now();
    await prepareImages();
    // Debian's systemd on the tier's local Debian base (debian:bookworm where a registry answers)
    await docker([
      'build', '-q', '--network', 'host', '-t', IMAGE,
      '--build-arg', `APP_IMAGE=${API_IMAGE}`, '--build-arg', `BASE_IMAGE=${REAL ? 'debian:bookworm' : TIER_IMAGES.debian}`,
      join(REPO, 'test', 'docker-engine', 'images', 'systemd'),
    ], { timeout: 1_800_000 });
    timings.images = Date.now() - t0;
    ports = await testPorts('platform');
    // SYS_PTRACE for this test's own look into the components' mount namespaces (nsenter), not for systemd
    await startSystemdHost(NAME, IMAGE, ['SYS_PTRACE']);
    // the platform stand-in's tokens, copied in for it
    const platformDir = tempDir('hapi-systemd-platform-');
    tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));
    await docker(['cp', `${platformDir}/.`, `${NAME}:/platform`]);
    await inHost(['useradd', '--system', '--user-group', '--home-dir', DIR, '--shell', '/usr/sbin/nologin', USER], { allowFail: false });
    await inHost(['chown', '-R', `${USER}:${USER}`, '/platform'], { allowFail: false });
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await docker(['rm', '-f', NAME], { allowFail: true, timeout: 300_000 });
    process.stdout.write(`docker systemd wall time ${((Date.now() - started) / 1000).toFixed(0)} s; steps (s): ${formatTimings(timings)}\n`);
    removeTempDirs();
  }, 600_000);

  it('runs under systemd as PID 1: install, consumer, the units in /etc/systemd/system, the built-in supervisor handed over, hospital-api.target enabled', async () => {
    expect((await inHost(['ps', '-p', '1', '-o', 'comm='])).out.trim()).toBe('systemd');
    const install = await toolkit([...installArgs(siteInstall()), '--generate-ca']);
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    const consumer = await toolkit(['consumer', 'create', 'hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const units = await toolkit(['systemd', '--out', '/etc/systemd/system', '--user', USER, '--json']);
    expect(units.code, units.err).toBe(0);
    const { steps } = JSON.parse(units.out).result as { steps: string[] };
    expect(steps.filter((s) => s.startsWith('cp ')), 'units written into /etc/systemd/system need no copy').toEqual([]);
    // the steps `hospital-api systemd` prints, in order
    expect((await toolkit(['down'])).code).toBe(0);
    await inHost(['chown', '-R', `${USER}:${USER}`, DIR], { allowFail: false });
    await inHost(['systemctl', 'daemon-reload'], { allowFail: false });
    const enable = await inHost(['systemctl', 'enable', '--now', 'hospital-api.target']);
    expect(enable.code, enable.err).toBe(0);
    const managed = await toolkit(['systemd', '--managed']);
    expect(managed.code, managed.err).toBe(0);
    await until('the API answering under systemd', 120_000, async () => ((await healthy()) ? true : null));
    const status = await toolkit(['status', '--json']);
    expect(status.code, status.err).toBe(0);
    const doc = JSON.parse(status.out) as { result: { components: Array<{ name: string; state: string; pid: number | null }> } };
    expect(doc.result.components.map((c) => [c.name, c.state])).toEqual(COMPONENTS.map((c) => [c, 'up']));
    for (const c of COMPONENTS) {
      const show = await unitShow(c);
      expect([c, show.ActiveState, show.User]).toEqual([c, 'active', USER]);
      expect(doc.result.components.find((x) => x.name === c)?.pid).toBe(Number(show.MainPID));
      expect((await inHost(['ps', '-o', 'user=', '-p', show.MainPID!])).out.trim()).toBe(USER);
    }
  }, 900_000);

  it('the units\' sandbox is in effect on each live component: no new privileges, no capabilities, a read-only system with only the install directory writable, a private /tmp', async () => {
    const hostTmp = (await inHost(['stat', '-L', '-c', '%d:%i', '/tmp'])).out.trim();
    const [uid, gid] = [(await inHost(['id', '-u', USER])).out.trim(), (await inHost(['id', '-g', USER])).out.trim()];
    for (const c of COMPONENTS) {
      const pid = (await unitShow(c)).MainPID!;
      const status = (await inHost(['cat', `/proc/${pid}/status`])).out;
      expect(/^NoNewPrivs:\s+(\d)/m.exec(status)?.[1], `${c}: NoNewPrivs`).toBe('1');
      expect(/^CapEff:\s+(\S+)/m.exec(status)?.[1], `${c}: CapEff`).toBe('0000000000000000');
      // mountinfo(5): field 5 is the mount point, field 6 its options
      const mounts = (await inHost(['cat', `/proc/${pid}/mountinfo`])).out.trim().split('\n').map((l) => l.split(' '));
      const options = (point: string) => mounts.filter((m) => m[4] === point).at(-1)?.[5] ?? '';
      expect(options('/').split(','), `${c}: / read-only`).toContain('ro');
      expect(options('/usr') || options('/'), `${c}: /usr read-only`).toMatch(/^ro\b/);
      expect(options(DIR).split(','), `${c}: the install directory writable`).toContain('rw');
      // PrivateTmp: the component's /tmp is not the host's
      const own = await inHost(['nsenter', '-t', pid, '-m', 'stat', '-L', '-c', '%d:%i', '/tmp']);
      expect(own.code, own.err).toBe(0);
      expect(own.out.trim(), `${c}: private /tmp`).toMatch(/^\d+:\d+$/);
      expect(own.out.trim(), `${c}: private /tmp`).not.toBe(hostTmp);
      // and the write itself is refused outside the install directory, allowed inside it
      const outside = await inHost(['nsenter', '-t', pid, '-m', '-S', uid, '-G', gid, 'touch', '/usr/local/hospital-api-probe']);
      expect(outside.code, `${c}: a write to /usr`).not.toBe(0);
      expect(outside.err).toMatch(/Read-only file system/);
      const inside = await inHost(['nsenter', '-t', pid, '-m', '-S', uid, '-G', gid, 'touch', `${DIR}/run/sandbox-probe`]);
      expect(inside.code, `${c}: a write in the install directory: ${inside.err}`).toBe(0);
      await inHost(['rm', '-f', `${DIR}/run/sandbox-probe`]);
    }
  }, 300_000);

  it('verify passes under systemd, and a record flows from the platform through the API, the gateway and the FHIR server', async () => {
    // the platform stand-in as a transient unit of its own, and the patients loaded from this host over loopback
    const platform = await inHost([
      'systemd-run', '--unit', 'platform-stand-in', '--uid', USER, '--gid', USER, '-p', 'ReadOnlyPaths=/platform',
      ...TOOLKIT, 'demo', '--platform-stand-in', '--listen', `127.0.0.1:${ports.platform}`, '--dir', '/platform',
    ]);
    expect(platform.code, platform.err).toBe(0);
    const data = tempDir('hapi-systemd-data-');
    const gen = await runCli(['fhir', 'generate', '--patients', String(dataset.patients.length), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--url', `http://127.0.0.1:${ports.fhir}/fhir`]);
    expect(load.exitCode, String(load.stderr)).toBe(0);
    const verify = await toolkit(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    expect(verify.out).toContain('ACCEPTED');
    for (const [i, patient] of dataset.patients.entries()) {
      const token = tokenOf(tokens, patient.careId);
      const res = await until(`patient ${i + 1}'s record`, 30_000, async () => {
        const r = await postPatient(ports.api, patient.careId, token);
        return r.status === 200 ? r : null;
      });
      const got = syntheticIds(res.resources);
      const expected = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id);
      expect(expected.length).toBeGreaterThan(10);
      expect(expected.filter((id) => !got.has(id)), `patient ${i + 1}: every generated resource`).toEqual([]);
    }
  }, 600_000);

  it('a killed component is restarted by systemd (Restart=always), and its lines are in the journal', async () => {
    const before = await unitShow('api');
    await inHost(['kill', '-9', before.MainPID!], { allowFail: false });
    const after = await until('systemd restarting the API', 60_000, async () => {
      const s = await unitShow('api');
      return s.ActiveState === 'active' && s.MainPID !== before.MainPID && s.MainPID !== '0' ? s : null;
    });
    expect(Number(after.NRestarts)).toBe(Number(before.NRestarts) + 1);
    await until('the restarted API answering', 60_000, async () => ((await healthy()) ? true : null));
    const journal = (await inHost(['journalctl', '-u', 'hospital-api-api.service', '--no-pager', '-o', 'cat'])).out;
    expect(journal.match(/hospital-api serve: listening on/g)?.length ?? 0).toBeGreaterThanOrEqual(2);
  }, 300_000);

  it('consumer rotate-key --write-env and cert renew go through systemctl: nothing restarts, the new key and certificate are in use, verify passes', async () => {
    const pids = Object.fromEntries(await Promise.all(COMPONENTS.map(async (c) => [c, (await unitShow(c)).MainPID] as const)));
    const rotate = await toolkit(['consumer', 'rotate-key', 'hospital', '--write-env', '--json']);
    expect(rotate.code, `${rotate.out}\n${rotate.err}`).toBe(0);
    const rotated = JSON.parse(rotate.out).result as { envWritten: boolean; revokedCredentialId: string | null };
    expect([rotated.envWritten, rotated.revokedCredentialId === null]).toEqual([true, false]);
    const renew = await toolkit(['cert', 'renew', '--json']);
    expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
    expect(JSON.parse(renew.out).result.gatewayReloaded).toBe(true);
    for (const c of COMPONENTS) expect([c, (await unitShow(c)).MainPID]).toEqual([c, pids[c]]);
    const patient = dataset.patients[0]!;
    const res = await postPatient(ports.api, patient.careId, tokenOf(tokens, patient.careId));
    expect(res.status).toBe(200);
    const verify = await toolkit(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  }, 300_000);

  it('install --verify-every under systemd: a timer the target starts, a one-shot verify as the service user that writes or finds the record; off removes both (issue 46)', async () => {
    const on = await toolkit([...installArgs(siteInstall()), '--verify-every', '1h']);
    expect(on.code, `${on.out}\n${on.err}`).toBe(0);
    const timer = await inHost(['systemctl', 'show', 'hospital-api-acceptance.timer', '-p', 'ActiveState', '-p', 'LoadState', '--value']);
    expect(timer.out.trim().split('\n')).toEqual(['loaded', 'active']);
    const before = (await inHost(['sh', '-c', `ls ${DIR}/reports/acceptance-*.json | wc -l`])).out.trim();
    const run = await inHost(['systemctl', 'start', 'hospital-api-acceptance.service'], { timeout: 600_000 });
    const journal = (await inHost(['journalctl', '-u', 'hospital-api-acceptance.service', '--no-pager', '-o', 'cat'])).out;
    expect(run.code, `${run.err}\n${journal}`).toBe(0);
    const show = (await inHost(['systemctl', 'show', 'hospital-api-acceptance.service', '-p', 'Result', '-p', 'User', '--value'])).out.trim().split('\n');
    expect(show).toEqual(['success', USER]);
    expect(journal).toMatch(/ACCEPTED: (record \S+ \((first|result changed|gateway configuration changed|daily);|unchanged since )/);
    const after = (await inHost(['sh', '-c', `ls ${DIR}/reports/acceptance-*.json | wc -l`])).out.trim();
    // a record only when something changed since verify's last one
    expect(Number(after) - Number(before)).toBe(/unchanged since/.test(journal) ? 0 : 1);
    const owners = (await inHost(['sh', '-c', `stat -c %U ${DIR}/reports/acceptance-*.json | sort -u`])).out.trim();
    expect(owners).toBe(USER);

    const off = await toolkit([...installArgs(siteInstall()), '--verify-every', 'off']);
    expect(off.code, `${off.out}\n${off.err}`).toBe(0);
    const gone = await inHost(['systemctl', 'show', 'hospital-api-acceptance.timer', '-p', 'LoadState', '--value']);
    expect(gone.out.trim()).toBe('not-found');
  }, 900_000);

  it('down stops hospital-api.target and up starts it again', async () => {
    const down = await toolkit(['down']);
    expect(down.code, down.err).toBe(0);
    for (const c of COMPONENTS) expect([c, (await unitShow(c)).ActiveState]).toEqual([c, 'inactive']);
    expect(await healthy()).toBe(false);
    const up = await toolkit(['up']);
    expect(up.code, up.err).toBe(0);
    await until('the API answering after up', 120_000, async () => ((await healthy()) ? true : null));
    for (const c of COMPONENTS) expect([c, (await unitShow(c)).ActiveState]).toEqual([c, 'active']);
  }, 300_000);
});
