/**
 * The attack bench (issue 24, on request: `npm run bench -- attack [--duration 3m]`):
 * an honest caller's POST /api/patients (API → gateway HTTPS → FHIR) on the
 * native DEMO stack, unloaded and then under each load in turn, one
 * sixth of the duration each:
 * - 10,000 idle TCP sockets spread over every port (API, gateway HTTP, HTTPS
 *   and admin, FHIR), scaled down with a note when `ulimit -n` is lower;
 * - slowloris on every port: request heads trickled a header line a second
 *   (on the TLS port, a handshake trickled a byte a second);
 * - slow bodies on every HTTP port: a 1 MB Content-Length body, a byte a second;
 * - a wrong-password basic-auth flood on the gateway's /fhir-api (one source);
 * - one 20,000-resource FHIR transaction Bundle posted through the gateway
 *   (/fhir-api-key-auth), again each time the last one ends.
 * Each load's p50/p99/errors are printed beside the unloaded figures with the
 * goal "p99 < 2× unloaded, 0 errors", and the supervisor's restarts at the end.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { readEnvFile } from '../src/util/env-file.js';
import { freePort } from '../src/util/port-check.js';
import { percentile, round, type BenchSection } from './report.js';
import { parseDuration } from './soak.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(root, 'bin/hospital-api.js');
const IDLE_SOCKETS = 10_000;
const SLOW_PER_PORT = 200;
const BUNDLE_RESOURCES = 20_000;

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

function open(port: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => resolve(null));
    s.once('connect', () => resolve(s));
  });
}

interface Load {
  name: string;
  start(): Promise<void>;
  stop(): Promise<string>;
}

function socketsLoad(name: string, ports: number[], perPort: number, first: (port: number) => string | Buffer, drip: (port: number) => string | Buffer): Load {
  const held: Array<{ s: Socket; port: number }> = [];
  let timer: NodeJS.Timeout | null = null;
  let closedByServer = 0;
  return {
    name,
    async start() {
      for (const port of ports) {
        for (let i = 0; i < perPort; i += 250) {
          const batch = await Promise.all(Array.from({ length: Math.min(250, perPort - i) }, () => open(port)));
          for (const s of batch) {
            if (!s) continue;
            s.on('close', () => (closedByServer += 1));
            s.resume();
            const f = first(port);
            if (f.length) s.write(f);
            held.push({ s, port });
          }
        }
      }
      timer = setInterval(() => {
        for (const { s, port } of held) {
          const d = drip(port);
          if (d.length && !s.destroyed) s.write(d);
        }
      }, 1_000);
    },
    async stop() {
      if (timer) clearInterval(timer);
      const before = closedByServer;
      for (const { s } of held) {
        s.removeAllListeners('close');
        s.destroy();
      }
      return `${held.length} opened, ${before} closed by the server`;
    },
  };
}

/** `one` returns the status it got and whether it was the expected one. */
function loopLoad(name: string, concurrency: number, one: () => Promise<[number, boolean]>): Load {
  let running = false;
  let sent = 0;
  let answered = 0;
  const statuses = new Map<string, number>();
  let workers: Promise<void>[] = [];
  return {
    name,
    async start() {
      running = true;
      workers = Array.from({ length: concurrency }, async () => {
        while (running) {
          sent += 1;
          const [status, ok] = await one().catch((err: { code?: string }) => [err.code ?? 'network', false] as [string, boolean]);
          if (ok) answered += 1;
          statuses.set(String(status), (statuses.get(String(status)) ?? 0) + 1);
        }
      });
    },
    async stop() {
      running = false;
      await Promise.all(workers);
      return `${sent} sent, ${answered} answered as expected (${[...statuses].map(([k, n]) => `${k}×${n}`).join(' ')})`;
    },
  };
}

function bundle(n: number): string {
  const entry = Array.from({ length: n }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resource: { resourceType: 'Patient', identifier: [{ system: 'urn:bench:attack', value: `a${i}` }], name: [{ family: 'Attack', given: [`B${i}`] }] },
    request: { method: 'POST', url: 'Patient' },
  }));
  return JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry });
}

export async function run(): Promise<BenchSection> {
  const durationMs = parseDuration(process.argv.slice(2), '--duration', 3 * 60_000);
  const phaseMs = durationMs / 6;
  const dir = mkdtempSync(join(tmpdir(), 'hapi-bench-attack-'));
  const flags = ['--api-port', '--fhir-port', '--gateway-http-port', '--gateway-https-port', '--gateway-admin-port', '--metrics-port', '--platform-port'];
  const portArgs: string[] = [];
  for (const flag of flags) portArgs.push(flag, String(await freePort()));
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
    const tlsAgent = new Agent({ connect: { ca }, connections: 16 });
    const gw = `https://localhost:${ports.gatewayHttps}`;
    const all = [ports.api, ports.gatewayHttp, ports.gatewayHttps, ports.gatewayAdmin, ports.fhir];
    const http = [ports.api, ports.gatewayHttp, ports.gatewayAdmin, ports.fhir];

    const limit = fileLimit();
    const idle = Math.min(IDLE_SOCKETS, Math.max(100, limit - 1_000));
    if (idle < IDLE_SOCKETS) notes.push(`idle sockets scaled down to ${idle}: this process may open ${limit} files`);
    const perPort = Math.floor(idle / all.length);
    const body = bundle(BUNDLE_RESOURCES);

    const loads: Load[] = [
      socketsLoad(`${perPort * all.length} idle sockets`, all, perPort, () => '', () => ''),
      socketsLoad(`slowloris (${SLOW_PER_PORT}/port)`, all, SLOW_PER_PORT,
        (p) => (p === ports.gatewayHttps ? Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]) : 'GET / HTTP/1.1\r\nHost: a\r\n'),
        (p) => (p === ports.gatewayHttps ? Buffer.from([0x01]) : 'X-a: b\r\n')),
      socketsLoad(`slow bodies (${SLOW_PER_PORT}/HTTP port)`, http, SLOW_PER_PORT,
        () => 'POST /api/patients HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{', () => ' '),
      loopLoad('basic-auth wrong-password flood (10 at a time)', 10, async () => {
        const res = await request(`${gw}/fhir-api/Patient`, { dispatcher: tlsAgent, headers: { authorization: `Basic ${Buffer.from('demo:wrong-password').toString('base64')}` } });
        await res.body.dump();
        return [res.statusCode, res.statusCode === 401 || res.statusCode === 429];
      }),
      loopLoad(`${BUNDLE_RESOURCES}-resource Bundle through the gateway`, 1, async () => {
        const res = await request(`${gw}/fhir-api-key-auth`, { dispatcher: tlsAgent, method: 'POST', headers: { 'content-type': 'application/fhir+json', apikey: apiKey }, body, headersTimeout: 600_000, bodyTimeout: 600_000 });
        await res.body.dump();
        return [res.statusCode, res.statusCode === 200];
      }),
    ];

    const token = tokens[0]!;
    const honest = async (): Promise<{ p50: number; p99: number; n: number; errors: number; kinds: string }> => {
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
      latencies.sort((a, b) => a - b);
      return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length, errors, kinds: [...kinds].map(([k, n]) => `${k}×${n}`).join(' ') };
    };

    process.stderr.write('attack: unloaded…\n');
    const base = await honest();
    const rows: BenchSection['rows'] = [{ load: 'none (unloaded)', requests: base.n, 'p50 ms': round(base.p50, 1), 'p99 ms': round(base.p99, 1), 'p99 / unloaded': 1, errors: base.errors, 'load detail': base.kinds }];
    const targets: BenchSection['targets'] = [];
    for (const load of loads) {
      process.stderr.write(`attack: ${load.name}…\n`);
      await load.start();
      const r = await honest();
      const detail = await load.stop();
      const ratio = r.p99 / base.p99;
      rows.push({ load: load.name, requests: r.n, 'p50 ms': round(r.p50, 1), 'p99 ms': round(r.p99, 1), 'p99 / unloaded': round(ratio, 2), errors: r.errors, 'load detail': `${detail}${r.kinds ? `; errors ${r.kinds}` : ''}` });
      targets.push({ name: `${load.name}: p99 / unloaded, errors`, value: round(ratio, 2), target: '< 2, 0 errors', met: ratio < 2 && r.errors === 0 });
    }
    await tlsAgent.close();
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
