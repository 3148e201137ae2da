/**
 * The api benchmark (issue #2): p50 latency of POST /api/patients through a
 * real `hospital-api serve` child, next to the floor — a raw undici client
 * fetching and parsing the same FHIR pages (search + every $everything page at
 * the largest page size, 1000) — for records of 100, 1,000 and 10,000
 * resources; and the serve process's peak RSS (VmHWM) after each size.
 * The stand-ins run in their own process so they do not share the client's CPU.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { freePort } from '../src/util/port-check.js';
import { percentile, round, type BenchSection } from './report.js';

const SIZES = [100, 1000, 10_000];
const PAGE = 1000;
const WARMUP = 5;
const RUNS = Number(process.env.BENCH_API_RUNS ?? 40);
const root = fileURLToPath(new URL('..', import.meta.url));

interface StandIns {
  platformUrl: string;
  fhirUrl: string;
  caFile: string;
  apiKey: string;
}

function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? round(Number(m[1]) / 1024, 1) : NaN;
}

async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const res = await request(url);
      await res.body.dump();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not come up`);
}

/** The floor: the same FHIR requests a minimal client needs, each page parsed. */
async function rawFetch(s: StandIns, agent: Agent, size: number): Promise<number> {
  const headers = { apikey: s.apiKey, accept: 'application/fhir+json', 'cache-control': 'no-cache' };
  const search = await request(`${s.fhirUrl}/Patient?identifier=care-${size}&_count=2`, { dispatcher: agent, headers });
  const found = (await search.body.json()) as { entry: Array<{ resource: { id: string } }> };
  let url: string | null = `${s.fhirUrl}/Patient/${found.entry[0]?.resource.id}/$everything?_count=${PAGE}`;
  let count = 0;
  while (url) {
    const res = await request(url, { dispatcher: agent, headers });
    const page = JSON.parse(await res.body.text()) as { entry?: unknown[]; link?: Array<{ relation: string; url: string }> };
    count += page.entry?.length ?? 0;
    const next = page.link?.find((l) => l.relation === 'next')?.url;
    url = next ? `${s.fhirUrl}${new URL(next).search}` : null;
  }
  return count;
}

async function apiFetch(apiUrl: string, size: number): Promise<number> {
  const res = await request(`${apiUrl}/api/patients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformCareId: `care-${size}`, token: 'Bearer bench' }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`POST /api/patients answered ${res.statusCode}: ${text.slice(0, 200)}`);
  return text.length;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

export async function run(): Promise<BenchSection> {
  const dir = mkdtempSync(join(tmpdir(), 'hapi-bench-api-'));
  const standIn = execa('node', ['--import', 'tsx', 'test/api/stand-in-main.ts', dir, ...SIZES.map(String)], { cwd: root, reject: false });
  let serve: ReturnType<typeof execa> | null = null;
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      standIn.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0] as string);
      });
      standIn.once('exit', () => reject(new Error('stand-ins exited early')));
    });
    const s = JSON.parse(line) as StandIns;
    const port = await freePort();
    serve = execa('node', [join(root, 'bin/hospital-api.js'), 'serve', '--host', '127.0.0.1', '--port', String(port)], {
      cwd: dir,
      reject: false,
      stdio: 'ignore',
      env: {
        PLATFORM_API_URL: s.platformUrl,
        FHIR_BASE_URL: s.fhirUrl,
        FHIR_API_KEY: s.apiKey,
        FHIR_CA_FILE: s.caFile,
        FHIR_PAGE_SIZE: String(PAGE),
        METRICS_LISTEN: 'off',
        AUDIT_LOG: join(dir, 'audit.log'),
        NO_COLOR: '1',
      },
    });
    const apiUrl = `http://127.0.0.1:${port}`;
    await waitFor(`${apiUrl}/api/health-check`);
    const agent = new Agent({ connect: { ca: readFileSync(s.caFile, 'utf8') } });
    const rows: BenchSection['rows'] = [];
    const ratios: Record<number, number> = {};
    const rss: Record<number, number> = {};
    for (const size of SIZES) {
      if ((await rawFetch(s, agent, size)) !== size) throw new Error(`raw client did not get ${size} resources`);
      for (let i = 0; i < WARMUP; i++) {
        await apiFetch(apiUrl, size);
        await rawFetch(s, agent, size);
      }
      const api: number[] = [];
      const raw: number[] = [];
      let bytes = 0;
      for (let i = 0; i < RUNS; i++) {
        // Interleaved so both see the same machine state.
        api.push(await time(async () => (bytes = await apiFetch(apiUrl, size))));
        raw.push(await time(() => rawFetch(s, agent, size)));
      }
      api.sort((a, b) => a - b);
      raw.sort((a, b) => a - b);
      const [p50, floor] = [percentile(api, 50), percentile(raw, 50)];
      ratios[size] = round(p50 / floor, 2);
      rss[size] = peakRssMiB(serve.pid as number);
      rows.push({
        resources: size,
        pages: Math.ceil(size / PAGE),
        'response KiB': round(bytes / 1024, 0),
        'api p50 ms': round(p50, 1),
        'api p90 ms': round(percentile(api, 90), 1),
        'raw p50 ms': round(floor, 1),
        ratio: ratios[size] as number,
        'serve peak RSS MiB': rss[size] as number,
      });
    }
    await agent.close();
    const rssRatio = round((rss[10_000] as number) / (rss[100] as number), 2);
    return {
      name: 'api',
      description:
        `POST /api/patients through a real serve child (platform + FHIR stand-ins in another process, FHIR over HTTPS), ` +
        `${RUNS} runs per size after ${WARMUP} warm-ups, sequential. Floor: undici fetching and parsing the same FHIR search ` +
        `and $everything pages (_count=${PAGE}) directly. Peak RSS is the serve process's VmHWM after each size, in order. ` +
        `Load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}.`,
      rows,
      targets: [
        { name: 'ratio at 1,000', value: ratios[1000] as number, target: '<= 1.25', met: (ratios[1000] as number) <= 1.25 },
        { name: 'ratio at 10,000', value: ratios[10_000] as number, target: '<= 1.25', met: (ratios[10_000] as number) <= 1.25 },
        { name: 'peak RSS 10,000 / 100', value: rssRatio, target: '<= 1.5', met: rssRatio <= 1.5 },
      ],
    };
  } finally {
    serve?.kill('SIGTERM');
    standIn.kill('SIGTERM');
    await Promise.allSettled([serve, standIn]);
    rmSync(dir, { recursive: true, force: true });
  }
}
