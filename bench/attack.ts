/**
 * The attack bench (issue 24, on request: `npm run bench -- attack [--duration 3m]`):
 * an honest caller's POST /api/patients (API → gateway HTTPS → FHIR) on the
 * native DEMO stack, unloaded and then under each load in turn, an equal
 * share of the duration each:
 * - 10,000 idle TCP sockets spread over every port (API, gateway HTTP, HTTPS
 *   and admin, FHIR), scaled down with a note when `ulimit -n` is lower;
 * - slowloris on every port: request heads trickled a header line a second
 *   (on the TLS port, a handshake trickled a byte a second);
 * - 1,030 held uploads to the API's POST /api/patients (its cap is 1,024; issue 45), slow bodies as below,
 *   each one the server closes opened again;
 * - slow bodies on every HTTP port: a 60,000-byte Content-Length body (under
 *   every body limit), a byte a second, each socket the server closes opened again;
 * - a wrong-password basic-auth flood on the gateway's /fhir-api (one source);
 * - issue 45's: HTTP/2 rapid reset by a key holder (4 connections opening
 *   and resetting streams to /fhir-api-key-auth/Patient?_count=1000), 300
 *   held uploads through /fhir-api-key-auth, and basic-auth with random
 *   usernames from 200 loopback addresses;
 * - one 20,000-resource FHIR transaction Bundle posted through the gateway
 *   (/fhir-api-key-auth), again each time the last one ends;
 * - POST /api/patients with a lone surrogate (`"\ud800"`) as care id, 10 at a time (issue 45: it was a
 *   500 ERR_INTERNAL; it must be a 400);
 * - one Patient with 100,000 `name[0].given` items (400 KB, issue 45) posted through the gateway
 *   (/fhir-api-key-auth), again each time the last one ends: it must be refused (400) at once.
 * Each load's p50/p99/errors are printed beside the unloaded figures with the
 * goal "p99 < 2× unloaded, 0 errors", and the supervisor's restarts at the end.
 *
 * To find which load or port hurts: `--only slow-bodies,flood` runs the loads
 * named (idle, slowloris, held-uploads, slow-bodies, flood, h2-rapid-reset, gateway-held-uploads, basic-auth-unknown-users, bundle, lone-surrogate, large-array), `--ports api,fhir` aims
 * the socket loads at those ports only (api, gateway-http, gateway-https,
 * gateway-admin, fhir). Every load runs in a child process (bench/attackers.ts)
 * so its writes, requests and garbage never delay the honest caller's own clock; each row
 * gives this process's event-loop delay p99 to show it stayed quiet.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { fork, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { readEnvFile } from '../src/util/env-file.js';
import { freePorts } from '../src/util/port-check.js';
import type { AttackPlan } from './attackers.js';
import { percentile, round, type BenchSection } from './report.js';
import { flagValue, parseDuration } from './soak.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(root, 'bin/hospital-api.js');
const IDLE_SOCKETS = 10_000;
const SLOW_PER_PORT = 200;
const BUNDLE_RESOURCES = 20_000;
const GIVEN_NAMES = 100_000;
/** Past the API's MAX_CONNECTIONS (1,024), as in issue 45. */
const HELD_UPLOADS = 1_030;
/** Held uploads through the gateway (issue 45: 300 exhausted FHIR's connections). */
const GATEWAY_HELD_UPLOADS = 300;
const UNKNOWN_USER_SOURCES = 200;

interface Ports { api: number; fhir: number; gatewayHttp: number; gatewayHttps: number; gatewayAdmin: number }

/** The soft open-file limit of this process (the bench holds one descriptor per socket). */
function fileLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s+/)[3]);
    return Number.isFinite(soft) ? soft : 1024;
  } catch {
    return 1024;
  }
}

interface Load {
  /** The name `--only` picks it by. */
  key: string;
  name: string;
  start(): Promise<void>;
  stop(): Promise<string>;
}

/** A load, run by a child process (bench/attackers.ts) so its sockets and requests never run on this event loop. */
function childLoad(name: string, plan: AttackPlan): Load {
  let child: ChildProcess | null = null;
  const reply = <T>(c: ChildProcess, field: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: Record<string, T>) => {
        if (!(field in m)) return;
        c.off('message', onMessage);
        resolve(m[field] as T);
      };
      c.on('message', onMessage);
      c.once('exit', (code) => reject(new Error(`attackers exited (${code}) before answering ${field}`)));
    });
  return {
    key: plan.kind,
    name,
    async start() {
      child = fork(join(root, 'bench/attackers.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const started = reply<boolean>(child, 'started');
      child.send(plan);
      await started;
    },
    async stop() {
      if (!child) return 'never started';
      const detail = reply<string>(child, 'detail');
      child.send('stop');
      return await detail;
    },
  };
}

/** `--flag a,b`: the names given (each must be one of `known`), or all of `known`. */
function listArg(flag: string, known: string[]): string[] {
  const value = flagValue(process.argv.slice(2), flag);
  if (value === undefined) return known;
  const names = value.split(',').map((n) => n.trim()).filter(Boolean);
  const unknown = names.filter((n) => !known.includes(n));
  if (!names.length || unknown.length) throw new Error(`${flag}: expected some of ${known.join(', ')}, got "${value}"`);
  return names;
}

export async function run(): Promise<BenchSection> {
  const durationMs = parseDuration(process.argv.slice(2), '--duration', 3 * 60_000);
  const dir = mkdtempSync(join(tmpdir(), 'hapi-bench-attack-'));
  const flags = ['--api-port', '--fhir-port', '--gateway-http-port', '--gateway-https-port', '--gateway-admin-port', '--metrics-port', '--platform-port'];
  const portArgs: string[] = [];
  const ports = await freePorts(flags.length);
  flags.forEach((flag, i) => portArgs.push(flag, String(ports[i])));
  const env = { ...process.env, NO_COLOR: '1', HOSPITAL_API_DIR: dir };
  const notes: string[] = [];
  try {
    process.stderr.write(`attack: starting the DEMO stack in ${dir}…\n`);
    const demo = await execa('node', [BIN, 'demo', '--dir', dir, '--json', ...portArgs], { env, reject: false, timeout: 300_000 });
    if (demo.exitCode !== 0) throw new Error(`demo failed (${demo.exitCode}): ${String(demo.stderr).slice(-2000)}`);
    const ports = (JSON.parse(readFileSync(join(dir, 'install.json'), 'utf8')) as { ports: Ports }).ports;
    const tokens = (JSON.parse(readFileSync(join(dir, 'demo', 'tokens.json'), 'utf8')) as { tokens: Array<{ careId: string; token: string }> }).tokens;
    const ca = readFileSync(join(dir, 'tls', 'ca.pem'), 'utf8');
    const apiKey = readEnvFile(join(dir, 'hospital-api.env')).FHIR_API_KEY ?? '';
    const gw = `https://localhost:${ports.gatewayHttps}`;
    const byName: Record<string, number> = { api: ports.api, 'gateway-http': ports.gatewayHttp, 'gateway-https': ports.gatewayHttps, 'gateway-admin': ports.gatewayAdmin, fhir: ports.fhir };
    const aimed = listArg('--ports', Object.keys(byName));
    const all = aimed.map((n) => byName[n]!);
    const http = aimed.filter((n) => n !== 'gateway-https').map((n) => byName[n]!);
    if (aimed.length < Object.keys(byName).length) notes.push(`socket loads aimed at ${aimed.join(', ')} only`);

    const limit = fileLimit();
    const idle = Math.min(IDLE_SOCKETS, Math.max(100, limit - 1_000));
    if (idle < IDLE_SOCKETS) notes.push(`idle sockets scaled down to ${idle}: this process may open ${limit} files`);
    const perPort = Math.floor(idle / all.length);

    const loads: Load[] = [
      childLoad(`${perPort * all.length} idle sockets`, { kind: 'idle', ports: all, perPort, tlsPort: ports.gatewayHttps, reopen: false }),
      childLoad(`slowloris (${SLOW_PER_PORT}/port)`, { kind: 'slowloris', ports: all, perPort: SLOW_PER_PORT, tlsPort: ports.gatewayHttps, reopen: false }),
      childLoad(`${HELD_UPLOADS.toLocaleString('en')} held uploads to the API (cap 1,024, reopened)`, { kind: 'held-uploads', ports: [ports.api], perPort: HELD_UPLOADS, tlsPort: ports.gatewayHttps, reopen: true }),
      childLoad(`slow bodies (${SLOW_PER_PORT}/HTTP port, reopened)`, { kind: 'slow-bodies', ports: http, perPort: SLOW_PER_PORT, tlsPort: ports.gatewayHttps, reopen: true }),
      childLoad('basic-auth wrong-password flood (10 at a time)', {
        kind: 'flood', url: `${gw}/fhir-api/Patient`, ca, method: 'GET', concurrency: 10, expect: [401, 429],
        headers: { authorization: `Basic ${Buffer.from('demo:wrong-password').toString('base64')}` },
      }),
      // issue 45
      childLoad('HTTP/2 rapid reset by a key holder (4 connections)', {
        kind: 'h2-rapid-reset', origin: gw, ca, path: '/fhir-api-key-auth/Patient?_count=1000', headers: { apikey: apiKey }, count: 4,
      }),
      childLoad(`held uploads through the gateway by a key holder (${GATEWAY_HELD_UPLOADS})`, {
        kind: 'gateway-held-uploads', origin: gw, ca, path: '/fhir-api-key-auth/Patient', headers: { apikey: apiKey }, count: GATEWAY_HELD_UPLOADS,
      }),
      childLoad(`basic-auth random usernames (${UNKNOWN_USER_SOURCES} addresses)`, {
        kind: 'basic-auth-unknown-users', origin: gw, ca, path: '/fhir-api/Patient', headers: {}, count: UNKNOWN_USER_SOURCES,
      }),
      childLoad(`${BUNDLE_RESOURCES}-resource Bundle through the gateway`, {
        kind: 'bundle', url: `${gw}/fhir-api-key-auth`, ca, method: 'POST', concurrency: 1, expect: [200], bundleResources: BUNDLE_RESOURCES,
        headers: { 'content-type': 'application/fhir+json', apikey: apiKey },
      }),
      childLoad('lone-surrogate care ids to the API (10 at a time)', {
        kind: 'lone-surrogate', url: `http://127.0.0.1:${ports.api}/api/patients`, ca, method: 'POST', concurrency: 10, expect: [400],
        headers: { 'content-type': 'application/json' }, body: `{"platformCareId":"care-\\ud800","token":${JSON.stringify(tokens[0]!.token)}}`,
      }),
      childLoad(`Patient with ${GIVEN_NAMES.toLocaleString('en')} given names through the gateway`, {
        kind: 'large-array', url: `${gw}/fhir-api-key-auth/Patient`, ca, method: 'POST', concurrency: 1, expect: [400], givenNames: GIVEN_NAMES,
        headers: { 'content-type': 'application/fhir+json', apikey: apiKey },
      }),
    ];

    const only = listArg('--only', loads.map((l) => l.key));
    // the duration is shared by the unloaded phase and each load run
    const phaseMs = durationMs / (1 + only.length);
    const token = tokens[0]!;
    const honest = async (): Promise<{ p50: number; p99: number; n: number; errors: number; kinds: string; loopP99: number }> => {
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const latencies: number[] = [];
      let errors = 0;
      const kinds = new Map<string, number>();
      const end = Date.now() + phaseMs;
      const agent = new Agent({ connections: 1 });
      while (Date.now() < end) {
        const t0 = process.hrtime.bigint();
        try {
          const res = await request(`http://127.0.0.1:${ports.api}/api/patients`, {
            dispatcher: agent, method: 'POST', headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ platformCareId: token.careId, token: token.token }), headersTimeout: 30_000, bodyTimeout: 30_000,
          });
          const text = await res.body.text();
          if (res.statusCode !== 200) {
            errors += 1;
            const k = String(res.statusCode);
            kinds.set(k, (kinds.get(k) ?? 0) + 1);
          } else void text;
        } catch (err) {
          errors += 1;
          const k = (err as { code?: string }).code ?? 'network';
          kinds.set(k, (kinds.get(k) ?? 0) + 1);
        }
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
      await agent.close();
      loop.disable();
      latencies.sort((a, b) => a - b);
      return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length, errors, kinds: [...kinds].map(([k, n]) => `${k}×${n}`).join(' '), loopP99: loop.percentile(99) / 1e6 };
    };

    process.stderr.write('attack: unloaded…\n');
    const base = await honest();
    const rows: BenchSection['rows'] = [{ load: 'none (unloaded)', requests: base.n, 'p50 ms': round(base.p50, 1), 'p99 ms': round(base.p99, 1), 'p99 / unloaded': 1, errors: base.errors, 'bench loop p99 ms': round(base.loopP99, 1), 'load detail': base.kinds }];
    const targets: BenchSection['targets'] = [];
    for (const load of loads.filter((l) => only.includes(l.key))) {
      process.stderr.write(`attack: ${load.name}…\n`);
      await load.start();
      const r = await honest();
      const detail = await load.stop();
      const ratio = r.p99 / base.p99;
      rows.push({ load: load.name, requests: r.n, 'p50 ms': round(r.p50, 1), 'p99 ms': round(r.p99, 1), 'p99 / unloaded': round(ratio, 2), errors: r.errors, 'bench loop p99 ms': round(r.loopP99, 1), 'load detail': `${detail}${r.kinds ? `; errors ${r.kinds}` : ''}` });
      targets.push({ name: `${load.name}: p99 / unloaded, errors`, value: round(ratio, 2), target: '< 2, 0 errors', met: ratio < 2 && r.errors === 0 });
    }
    const status = await execa('node', [BIN, 'status', '--dir', dir, '--json'], { env, reject: false, timeout: 60_000 });
    const restarts = (JSON.parse(String(status.stdout || '{}')) as { result?: { components?: Array<{ name: string; restarts?: number }> } })
      .result?.components?.map((c) => `${c.name} ${c.restarts ?? 0}`).join(', ') ?? `unknown (status exited ${status.exitCode})`;
    return {
      name: 'attack',
      description: `Native DEMO stack; an honest POST /api/patients (one patient, one at a time) for ${round(phaseMs / 1000, 0)} s unloaded and under each load. ` +
        `Goal: p99 < 2× unloaded, 0 errors. Supervisor restarts at the end: ${restarts}.${notes.length ? ` Note: ${notes.join('; ')}.` : ''}`,
      rows,
      targets,
    };
  } finally {
    await execa('node', [BIN, 'down', '--dir', dir], { env, reject: false, timeout: 60_000 });
    // KEEP=1 leaves the stack's folder (its logs) for a look afterwards
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
  }
}
