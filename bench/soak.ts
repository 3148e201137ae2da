/**
 * The soak (issue #12): steady load on the real native stack for a while
 * (10 minutes by default; `npm run bench -- soak --duration 2m`), with each
 * component's RSS sampled. Reports requests, errors, and RSS at the end of the
 * warm-up and at the end. Goal: no errors, RSS growth under 10% after warm-up.
 *
 * The stack is the DEMO install (`hospital-api demo`: native runtime, synthetic
 * patients of 10 to 2,000 resources, the platform stand-in, a consumer key) in
 * a temporary directory on free loopback ports; the load is POST /api/patients
 * for those patients, CONCURRENCY requests at a time, round-robin.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { freePorts } from '../src/util/port-check.js';
import { percentile, round, type BenchSection } from './report.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(root, 'bin/hospital-api.js');
const CONCURRENCY = Number(process.env.BENCH_SOAK_CONCURRENCY ?? 4);
const SAMPLE_MS = 5_000;
/** Growth target (end vs end of warm-up). */
const MAX_GROWTH = 0.1;

/** `--duration 10m`, `--duration 120s`, `--duration 90` (seconds). */
/** The value of `--flag v` or `--flag=v` in argv: undefined when the flag is absent, '' when it has no value. */
export function flagValue(argv: string[], flag: string): string | undefined {
  const i = argv.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
  if (i < 0) return undefined;
  return (argv[i]?.includes('=') ? argv[i]?.split('=')[1] : argv[i + 1]) ?? '';
}

export function parseDuration(argv: string[], flag = '--duration', fallbackMs = 10 * 60_000): number {
  const value = flagValue(argv, flag);
  if (value === undefined) return fallbackMs;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value ?? '');
  if (!m) throw new Error(`${flag}: expected e.g. 10m, 120s or 90, got "${value}"`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

function rssMiB(pid: number): number | null {
  return statusMiB(pid, 'VmRSS');
}

/** One `kB` line of /proc/<pid>/status, in MiB (proc(5)): VmRSS = RssAnon + RssFile + RssShmem. */
function statusMiB(pid: number, field: 'VmRSS' | 'RssAnon' | 'RssFile'): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
    const kb = line ? Number.parseInt(line.slice(field.length + 1).trim(), 10) : NaN;
    return Number.isFinite(kb) ? kb / 1024 : null;
  } catch {
    return null;
  }
}

interface RunState {
  components: Array<{ name: string; pid: number | null }>;
}

export async function run(): Promise<BenchSection> {
  const durationMs = parseDuration(process.argv.slice(2));
  // Each process sizes its heaps (V8's spaces, malloc's arenas) during the first minutes of load, and
  // how soon depends on the request rate: at 108-229 requests/s the gateway stood at its plateau
  // (191-200 MiB) after 60 s; at 77 requests/s (two 10-minute runs, docs/runtime.md) it stood at
  // 150 MiB after 60 s and at 198 MiB from the second minute to the end. Growth is measured after
  // the first two minutes (or half of a shorter run).
  const warmupMs = Math.min(parseDuration(process.argv.slice(2), '--warmup', 120_000), durationMs / 2);
  const dir = mkdtempSync(join(tmpdir(), 'hapi-bench-soak-'));
  const flags = ['--api-port', '--fhir-port', '--gateway-http-port', '--gateway-https-port', '--gateway-admin-port', '--metrics-port', '--platform-port'];
  const ports: string[] = [];
  const free = await freePorts(flags.length);
  flags.forEach((flag, i) => ports.push(flag, String(free[i])));
  const env = { ...process.env, NO_COLOR: '1', HOSPITAL_API_DIR: dir };
  try {
    process.stderr.write(`soak: starting the DEMO stack in ${dir}…\n`);
    const demo = await execa('node', [BIN, 'demo', '--dir', dir, '--json', ...ports], { env, reject: false, timeout: 300_000 });
    if (demo.exitCode !== 0) throw new Error(`demo failed (${demo.exitCode}): ${String(demo.stderr).slice(-2000)}`);
    const install = JSON.parse(readFileSync(join(dir, 'install.json'), 'utf8')) as { ports: { api: number; metrics: number } };
    const tokens = (JSON.parse(readFileSync(join(dir, 'demo', 'tokens.json'), 'utf8')) as { tokens: Array<{ careId: string; token: string }> }).tokens;
    const state = JSON.parse(readFileSync(join(dir, 'run', 'state.json'), 'utf8')) as RunState;
    const pids = state.components.filter((c) => c.pid).map((c) => ({ name: c.name, pid: c.pid as number }));
    const apiUrl = `http://127.0.0.1:${install.ports.api}`;
    const agent = new Agent({ connections: CONCURRENCY });

    let requests = 0;
    let errors = 0;
    const errorKinds = new Map<string, number>();
    const latencies: number[] = [];
    const samples: Array<{ at: number; rss: Record<string, number | null>; anon: Record<string, number | null> }> = [];
    const sample = () =>
      samples.push({
        at: Date.now(),
        rss: Object.fromEntries(pids.map((p) => [p.name, rssMiB(p.pid)])),
        // anonymous memory (heaps, malloc arenas) apart from mapped files (code pages touched as the JIT warms)
        anon: Object.fromEntries(pids.map((p) => [p.name, statusMiB(p.pid, 'RssAnon')])),
      });
    // The API's live heap, from its own metrics: RSS also moves when V8 resizes its heap, heap used
    // after collections (the low points) is what a leak would raise.
    const heap: Array<{ at: number; usedMiB: number; totalMiB: number; externalMiB: number; spaces: Record<string, number> }> = [];
    const sampleHeap = async (): Promise<void> => {
      try {
        const res = await request(`http://127.0.0.1:${install.ports.metrics}/metrics`);
        const text = await res.body.text();
        const metric = (name: string): number => Number(new RegExp(`^hospital_api_${name}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
        const usedMiB = metric('nodejs_heap_size_used_bytes');
        // committed size of each V8 heap space (new = the young generation, whose semi-spaces V8 grows under load)
        const spaces: Record<string, number> = {};
        for (const m of text.matchAll(/^hospital_api_nodejs_heap_space_size_total_bytes\{space="([a-z_]+)"\} (\S+)/gm)) spaces[m[1]!] = Number(m[2]) / 2 ** 20;
        if (Number.isFinite(usedMiB)) heap.push({ at: Date.now(), usedMiB, totalMiB: metric('nodejs_heap_size_total_bytes'), externalMiB: metric('nodejs_external_memory_bytes'), spaces });
      } catch {
        // metrics off or busy: RSS is still reported
      }
    };
    const heapSampler = setInterval(() => void sampleHeap(), 1_000);
    const started = Date.now();
    const end = started + durationMs;
    sample();
    const sampler = setInterval(() => {
      sample();
      const s = Math.round((Date.now() - started) / 1000);
      process.stderr.write(`soak: ${s}s, ${requests} requests, ${errors} errors\n`);
    }, SAMPLE_MS);

    let next = 0;
    const worker = async (): Promise<void> => {
      while (Date.now() < end) {
        const t = tokens[next++ % tokens.length] as { careId: string; token: string };
        const t0 = process.hrtime.bigint();
        try {
          const res = await request(`${apiUrl}/api/patients`, {
            dispatcher: agent,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ platformCareId: t.careId, token: t.token }),
          });
          const body = await res.body.text();
          if (res.statusCode !== 200 || !body.startsWith('{"resources":[')) {
            errors++;
            const kind = `${res.statusCode} ${/"code":"([A-Z_]+)"/.exec(body)?.[1] ?? ''}`.trim();
            errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
          }
        } catch (err) {
          errors++;
          const kind = (err as { code?: string }).code ?? 'network';
          errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
        }
        requests++;
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    clearInterval(sampler);
    clearInterval(heapSampler);
    sample();
    await agent.close();
    // The supervisor's own view at the end: a component it found hung (no answer to its health probe for
    // 30 s) or that crashed would show as a restart here.
    const status = await execa('node', [BIN, 'status', '--dir', dir, '--json'], { env, reject: false, timeout: 60_000 });
    const restarts = (JSON.parse(String(status.stdout || '{}')) as { result?: { components?: Array<{ name: string; restarts?: number }> } })
      .result?.components?.map((c) => `${c.name} ${c.restarts ?? 0}`).join(', ') ?? `unknown (status exited ${status.exitCode})`;

    const afterWarmup = samples.find((s) => s.at - started >= warmupMs) ?? samples[0];
    const last = samples[samples.length - 1];
    const sorted = latencies.sort((a, b) => a - b);
    const rows: BenchSection['rows'] = pids.map(({ name }) => {
      const first = samples[0]?.rss[name] ?? NaN;
      const warm = afterWarmup?.rss[name] ?? NaN;
      const final = last?.rss[name] ?? NaN;
      const peak = Math.max(...samples.map((s) => s.rss[name] ?? 0));
      return {
        component: name,
        'rss start MiB': round(first, 1),
        'rss after warm-up MiB': round(warm, 1),
        'rss end MiB': round(final, 1),
        'rss peak MiB': round(peak, 1),
        'growth after warm-up %': round(((final - warm) / warm) * 100, 1),
        'anon after warm-up MiB': round(afterWarmup?.anon[name] ?? NaN, 1),
        'anon end MiB': round(last?.anon[name] ?? NaN, 1),
      };
    });
    const worstGrowth = Math.max(...rows.map((r) => Number(r['growth after warm-up %'])));
    const lowIn = (from: number, to: number): number => Math.min(...heap.filter((h) => h.at >= from && h.at < to).map((h) => h.usedMiB));
    const span = end - (started + warmupMs);
    const heapEarly = lowIn(started + warmupMs, started + warmupMs + span / 3);
    const heapLate = lowIn(end - span / 3, end + 1);
    const heapAt = (t: number) => heap.find((h) => h.at >= t) ?? heap.at(-1);
    // the curve, one RSS sample a minute: a leak keeps climbing, a heap still sizing itself flattens
    const curve = pids
      .map(({ name }) => `${name} ${samples.filter((x, i) => i === 0 || Math.floor((x.at - started) / 60_000) > Math.floor((samples[i - 1]!.at - started) / 60_000)).map((x) => round(x.rss[name] ?? NaN, 0)).join(' → ')}`)
      .join('; ');
    const seconds = (Date.now() - started) / 1000;
    return {
      name: 'soak',
      description:
        `Native DEMO stack (${tokens.length} patients, 10-2,000 resources), POST /api/patients round-robin, ${CONCURRENCY} at a time, ` +
        `for ${round(seconds, 0)} s (warm-up ${round(warmupMs / 1000, 0)} s); RSS of each component every ${SAMPLE_MS / 1000} s. ` +
        `${requests} requests (${round(requests / seconds, 1)}/s), ${errors} errors${errorKinds.size ? ` (${[...errorKinds].map(([k, n]) => `${k}: ${n}`).join(', ')})` : ''}; ` +
        `latency p50 ${round(percentile(sorted, 50), 1)} ms, p99 ${round(percentile(sorted, 99), 1)} ms; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}. ` +
        `API heap used, lowest 1 s sample (about the live heap after a collection; a leak raises it): ${round(heapEarly, 1)} MiB in the first third after warm-up, ${round(heapLate, 1)} MiB in the last third. ` +
        `API V8 heap committed ${round(heapAt(started + warmupMs)?.totalMiB ?? NaN, 1)} MiB after warm-up, ${round(heap.at(-1)?.totalMiB ?? NaN, 1)} MiB at the end; ` +
        `external (Buffers) ${round(heapAt(started + warmupMs)?.externalMiB ?? NaN, 1)} MiB, ${round(heap.at(-1)?.externalMiB ?? NaN, 1)} MiB; ` +
        `committed by space after warm-up → end: ${['new', 'old', 'large_object', 'code'].map((sp) => `${sp} ${round(heapAt(started + warmupMs)?.spaces[sp] ?? NaN, 1)} → ${round(heap.at(-1)?.spaces[sp] ?? NaN, 1)}`).join(', ')} MiB. ` +
        `RSS MiB at each minute: ${curve}. Supervisor restarts during the run: ${restarts}.`,
      rows,
      targets: [
        { name: 'errors', value: errors, target: '= 0', met: errors === 0 },
        { name: 'requests', value: requests, target: '> 0', met: requests > 0 },
        { name: 'worst RSS growth after warm-up %', value: worstGrowth, target: `< ${MAX_GROWTH * 100}`, met: worstGrowth < MAX_GROWTH * 100 },
      ],
    };
  } finally {
    await execa('node', [BIN, 'down', '--dir', dir], { env, reject: false, timeout: 60_000 });
    rmSync(dir, { recursive: true, force: true });
  }
}
