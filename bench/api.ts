/**
 * The api benchmark (issue #2): p50 latency of POST /api/patients through a
 * real `hospital-api serve` child, next to the floor — a raw undici client
 * fetching and parsing the same FHIR pages (search + every $everything page at
 * the largest page size, 1000) — for records of 100, 1,000 and 10,000
 * resources; and the serve process's peak RSS (VmHWM) after each size, then
 * after a 100,000-resource record (issue 28: memory bounded by what is in
 * flight, not by the record). Then 2,000 resources in 40 pages of 50 through a
 * second serve (FHIR_PAGE_SIZE=50) next to PASS_THROUGH, a minimal node-core
 * forwarder of the same pages with no checks (no platform call, no audit, no
 * de-duplication), measured alternately. At 1,000 resources, two lower bounds
 * beside the undici floor: the pass-through forwarding the page's bytes, and
 * the same with the steps no implementation may leave out (validate-access,
 * the started and end audit lines on disk).
 * The stand-ins run in their own process so they do not share the client's CPU.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { API_MALLOC_ENV, COMPONENT_NODE_ARGS } from '../src/runtime/native/components.js';
import { freePorts } from '../src/util/port-check.js';
import { percentile, round, type BenchSection } from './report.js';

const SIZES = [100, 1000, 10_000];
/** Memory only (a few runs: each is ~43 MB of answer). */
const HUGE = 100_000;
const HUGE_RUNS = 3;
const PAGE = 1000;
/** The pass-through comparison: 2,000 resources in 40 pages of 50. */
const SMALL_PAGES = { size: 2000, page: 50 };
const WARMUP = 5;
const RUNS = Number(process.env.BENCH_API_RUNS ?? 40);
const root = fileURLToPath(new URL('..', import.meta.url));

interface StandIns {
  platformUrl: string;
  fhirUrl: string;
  caFile: string;
  apiKey: string;
}

/** CPU time (user + system, all threads) the process has used, in ms: from /proc/<pid>/stat (proc(5)), in clock ticks of 10 ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
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

/**
 * The pass-through (argv: port, FHIR base, CA file, key, page size, mode,
 * platform URL, audit file): the search, then every $everything page, each
 * parsed and its entries forwarded as {"resources":[…]}; no checks of any kind.
 * Mode `bytes`: each page's bytes forwarded as they came, the least any proxy
 * of the record does (not the answer's shape: a lower bound, not a rival). It
 * reads the next link from the members before `entry` only (HAPI writes `link` first, as the stand-in does):
 * parsing the whole page for it, as this mode first did, cost a third of the
 * floor at 1,000 resources and made the bound look higher than it is.
 * Mode `steps`: `bytes` plus what no implementation of the API may leave out:
 * validate-access before any FHIR request (the interface), a started line on
 * disk before the record's first byte (fail closed) and an end line on disk
 * before its closing bytes (docs/api.md#audit-log); no checks, no de-duplication.
 * Mode `audited` (issue 49: the floor of 40 pages of 50): the answer's shape
 * (each entry parsed and written out again) plus the same steps.
 */
const PASS_THROUGH = `
const https = require('node:https');
const http = require('node:http');
const fs = require('node:fs');
const [port, base, caFile, key, pageSize, mode, platformUrl, auditFile] = process.argv.slice(1);
const steps = mode === 'steps' || mode === 'audited';
const forwardBytes = mode === 'bytes' || mode === 'steps';
const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(caFile) });
const headers = { apikey: key, accept: 'application/fhir+json', 'cache-control': 'no-cache' };
// The Bundle's members before "entry", closed: its links without its entries.
const head = (bytes) => {
  const at = bytes.indexOf('"entry"');
  if (at < 0) return JSON.parse(bytes.toString('utf8'));
  return JSON.parse(bytes.toString('utf8', 0, at).trimEnd().replace(/,$/, '') + '}');
};
const get = (url, whole) => new Promise((resolve, reject) => {
  https.get(url, { agent, headers }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => {
      const bytes = Buffer.concat(chunks);
      resolve(forwardBytes && !whole ? Object.assign(head(bytes), { bytes }) : JSON.parse(bytes.toString('utf8')));
    });
  }).on('error', reject);
});
// Mode steps: the steps the API may not skip, and nothing else. The token goes to validate-access before any FHIR
// request; a started line is on disk (fdatasync, run while the page is fetched) before the first byte of the record;
// an end line is on disk (O_DSYNC) before the closing bytes.
const platformAgent = new http.Agent({ keepAlive: true });
const validate = (token) => new Promise((resolve, reject) => {
  http.get(platformUrl + '/validate-access', { agent: platformAgent, headers: { authorization: token, accept: 'application/json' } }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error('validate-access ' + res.statusCode))));
  }).on('error', reject);
});
const startedFd = steps ? fs.openSync(auditFile, 'a', 0o600) : -1;
const endFd = steps ? fs.openSync(auditFile, fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_DSYNC, 0o600) : -1;
const append = (fd, record, sync) => new Promise((resolve, reject) => {
  fs.write(fd, JSON.stringify({ ...record, at: new Date().toISOString() }) + '\\n', (err) => {
    if (err) reject(err);
    else if (sync) fs.fdatasync(fd, (e) => (e ? reject(e) : resolve()));
    else resolve();
  });
});
http.createServer((req, res) => {
  const body = [];
  req.on('data', (c) => body.push(c));
  req.on('end', async () => {
    const { platformCareId, token } = JSON.parse(Buffer.concat(body).toString('utf8'));
    if (steps) await validate(token);
    const found = await get(base + '/Patient?identifier=' + encodeURIComponent(platformCareId) + '&_count=2', true);
    const patient = found.entry[0].resource.id;
    let started = steps ? append(startedFd, { phase: 'started', platformCareId, patient }, true) : null;
    let url = base + '/Patient/' + patient + '/$everything?_count=' + pageSize;
    if (!steps) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"resources":[');
    }
    let first = true;
    let bytes = 0;
    while (url) {
      const page = await get(url);
      if (started) {
        await started;
        started = null;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"resources":[');
      }
      if (forwardBytes) {
        res.write(page.bytes);
        bytes += page.bytes.length;
      } else for (const e of page.entry ?? []) {
        const text = (first ? '' : ',') + JSON.stringify(e);
        res.write(text);
        bytes += text.length;
        first = false;
      }
      const next = (page.link ?? []).find((l) => l.relation === 'next');
      url = next ? base + new URL(next.url).search : null;
    }
    if (steps) await append(endFd, { phase: 'end', platformCareId, patient, status: 200, bytes }, false);
    res.end(']}');
  });
}).listen(Number(port), '127.0.0.1');
`;

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

/** Each of `fns` in turn, WARMUP times, untimed. */
async function warmUp(...fns: Array<() => Promise<unknown>>): Promise<void> {
  for (let i = 0; i < WARMUP; i++) for (const fn of fns) await fn();
}

/** Each of `fns` in turn, RUNS times (interleaved, so all see the same machine state): each one's times in ms, sorted. */
async function alternately(...fns: Array<() => Promise<unknown>>): Promise<number[][]> {
  const times = fns.map((): number[] => []);
  for (let i = 0; i < RUNS; i++) for (const [k, fn] of fns.entries()) times[k]!.push(await time(fn));
  return times.map((t) => t.sort((x, y) => x - y));
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

interface Stats {
  p50: number;
  p90: number;
  /** The server process's CPU ms per request over the timed runs. */
  cpu: number;
}

/**
 * One case: POST /api/patients for `size` through each server in turn, RUNS times after WARMUP (and `direct`, the
 * client fetching FHIR itself, in the same turn when given), so every request shares the machine's state with the
 * others. Rows (ratio to the first server, or to `direct`), and each server's p50, p90 and CPU per request.
 */
async function interleaved(
  servers: Array<{ url: string; pid: number; what: string }>,
  size: number,
  /** The ratio's floor: the client fetching FHIR itself (timed in the same turn), or one of `servers` by index. */
  floorOf: { direct: () => Promise<unknown>; what: string } | number,
): Promise<{ rows: BenchSection['rows']; stats: Stats[] }> {
  const bytes = servers.map(() => 0);
  const fns: Array<() => Promise<unknown>> = servers.map((x, k) => async () => (bytes[k] = await apiFetch(x.url, size)));
  const direct = typeof floorOf === 'number' ? null : floorOf.direct;
  if (direct) fns.push(direct);
  await warmUp(...fns);
  const cpu0 = servers.map((x) => cpuMs(x.pid));
  const times = await alternately(...fns);
  const stats = servers.map((x, k): Stats => ({
    p50: percentile(times[k] as number[], 50),
    p90: percentile(times[k] as number[], 90),
    cpu: (cpuMs(x.pid) - (cpu0[k] as number)) / RUNS,
  }));
  const floor = direct ? percentile(times[servers.length] as number[], 50) : (stats[floorOf as number] as Stats).p50;
  const pages = Math.ceil(size / (size === SMALL_PAGES.size ? SMALL_PAGES.page : PAGE));
  const rows = servers.map((x, k) => ({
    case: `${size.toLocaleString('en')} resources, ${pages} page(s), ${RUNS} runs, interleaved: ${x.what}`,
    'response KiB': round((bytes[k] as number) / 1024, 0),
    'api p50 ms': round((stats[k] as Stats).p50, 1),
    'api p90 ms': round((stats[k] as Stats).p90, 1),
    'floor p50 ms': round(floor, 1),
    ratio: round((stats[k] as Stats).p50 / floor, 2),
    'serve CPU ms/request': round((stats[k] as Stats).cpu, 2),
    'serve peak RSS MiB': k === 0 ? peakRssMiB(x.pid) : '–',
  }));
  const floorWhat = typeof floorOf === 'number' ? `row ${floorOf + 1} of this case` : floorOf.what;
  rows.forEach((r) => (r.case += ` (floor: ${floorWhat})`));
  return { rows, stats };
}

function startServe(dir: string, s: StandIns, port: number, pageSize: number, audit: string): ReturnType<typeof execa> {
  // with the Node options and malloc settings the supervisor, the systemd unit and the image give the API
  return execa('node', [...COMPONENT_NODE_ARGS, join(root, 'bin/hospital-api.js'), 'serve', '--host', '127.0.0.1', '--port', String(port)], {
    cwd: dir,
    reject: false,
    stdio: 'ignore',
    env: {
      ...API_MALLOC_ENV,
      PLATFORM_API_URL: s.platformUrl,
      FHIR_BASE_URL: s.fhirUrl,
      FHIR_API_KEY: s.apiKey,
      FHIR_CA_FILE: s.caFile,
      FHIR_PAGE_SIZE: String(pageSize),
      // The stand-in keys patients by the bare care id (as test/api/harness.ts does).
      PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true',
      METRICS_LISTEN: 'off',
      AUDIT_LOG: join(dir, audit),
      NO_COLOR: '1',
    },
  });
}

export async function run(): Promise<BenchSection> {
  const loadAtStart = loadavg();
  const dir = mkdtempSync(join(tmpdir(), 'hapi-bench-api-'));
  const recordSizes = [...SIZES, HUGE, SMALL_PAGES.size];
  const standIn = execa('node', ['--import', 'tsx', 'test/api/stand-in-main.ts', dir, ...recordSizes.map(String)], { cwd: root, reject: false });
  const children: Array<ReturnType<typeof execa>> = [];
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
    const [port, smallPort, passPort, bigPassPort, stepsPort, auditedPort, smallStepsPort] = (await freePorts(7)) as [number, number, number, number, number, number, number];
    const serve = startServe(dir, s, port, PAGE, 'audit.log');
    const smallServe = startServe(dir, s, smallPort, SMALL_PAGES.page, 'audit-small.log');
    const pass = execa('node', ['-e', PASS_THROUGH, String(passPort), s.fhirUrl, s.caFile, s.apiKey, String(SMALL_PAGES.page)], { reject: false, stdio: 'ignore' });
    // the pass-through with the API's page size, forwarding each page's bytes: how far any proxy of the one-page record sits above the floor
    const bigPass = execa('node', ['-e', PASS_THROUGH, String(bigPassPort), s.fhirUrl, s.caFile, s.apiKey, String(PAGE), 'bytes'], { reject: false, stdio: 'ignore' });
    // the same, plus the steps the API may not skip (validate-access, two synced audit lines): the floor of any implementation
    const stepsPass = execa('node', ['-e', PASS_THROUGH, String(stepsPort), s.fhirUrl, s.caFile, s.apiKey, String(PAGE), 'steps', s.platformUrl, join(dir, 'audit-steps.log')], {
      reject: false,
      stdio: 'ignore',
    });
    // 40 pages of 50: the pass-through with the answer's shape and the same steps (the audited pass-through: that row's floor,
    // issue 49), and the byte-forwarding one with the steps (the least any audited proxy of those pages costs)
    const auditedPass = execa(
      'node',
      ['-e', PASS_THROUGH, String(auditedPort), s.fhirUrl, s.caFile, s.apiKey, String(SMALL_PAGES.page), 'audited', s.platformUrl, join(dir, 'audit-audited.log')],
      { reject: false, stdio: 'ignore' },
    );
    const smallStepsPass = execa(
      'node',
      ['-e', PASS_THROUGH, String(smallStepsPort), s.fhirUrl, s.caFile, s.apiKey, String(SMALL_PAGES.page), 'steps', s.platformUrl, join(dir, 'audit-small-steps.log')],
      { reject: false, stdio: 'ignore' },
    );
    children.push(serve, smallServe, pass, bigPass, stepsPass, auditedPass, smallStepsPass);
    const apiUrl = `http://127.0.0.1:${port}`;
    const smallUrl = `http://127.0.0.1:${smallPort}`;
    const passUrl = `http://127.0.0.1:${passPort}`;
    const bigPassUrl = `http://127.0.0.1:${bigPassPort}`;
    const stepsUrl = `http://127.0.0.1:${stepsPort}`;
    const auditedUrl = `http://127.0.0.1:${auditedPort}`;
    const smallStepsUrl = `http://127.0.0.1:${smallStepsPort}`;
    await waitFor(`${apiUrl}/api/health-check`);
    await waitFor(`${smallUrl}/api/health-check`);
    const agent = new Agent({ connect: { ca: readFileSync(s.caFile, 'utf8') } });
    const rows: BenchSection['rows'] = [];
    const ratios: Record<number, number> = {};
    const rss: Record<number, number> = {};
    for (const size of [...SIZES, HUGE]) {
      const runs = size === HUGE ? HUGE_RUNS : RUNS;
      if ((await rawFetch(s, agent, size)) !== size) throw new Error(`raw client did not get ${size} resources`);
      for (let i = 0; i < (size === HUGE ? 1 : WARMUP); i++) {
        await apiFetch(apiUrl, size);
        await rawFetch(s, agent, size);
      }
      const api: number[] = [];
      const raw: number[] = [];
      let bytes = 0;
      // serve's CPU time over the timed runs: only the API requests reach it (a figure the load moves less than wall time).
      const cpu0 = cpuMs(serve.pid as number);
      for (let i = 0; i < runs; i++) {
        // Interleaved so both see the same machine state.
        api.push(await time(async () => (bytes = await apiFetch(apiUrl, size))));
        raw.push(await time(() => rawFetch(s, agent, size)));
      }
      const serveCpu = (cpuMs(serve.pid as number) - cpu0) / runs;
      api.sort((a, b) => a - b);
      raw.sort((a, b) => a - b);
      const [p50, floor] = [percentile(api, 50), percentile(raw, 50)];
      ratios[size] = round(p50 / floor, 2);
      rss[size] = peakRssMiB(serve.pid as number);
      rows.push({
        case: `${size.toLocaleString('en')} resources, ${Math.ceil(size / PAGE)} page(s) of ${PAGE}, ${runs} runs`,
        'response KiB': round(bytes / 1024, 0),
        'api p50 ms': round(p50, 1),
        'api p90 ms': round(percentile(api, 90), 1),
        'floor p50 ms': round(floor, 1),
        ratio: ratios[size] as number,
        'serve CPU ms/request': round(serveCpu, 2),
        'serve peak RSS MiB': rss[size] as number,
      });
    }

    // 1,000 resources in one page: the API and two pass-throughs next to the same direct client, in turn, so each
    // request of the four shares the machine's state with the others (issue 49). The target is the API against the
    // second pass-through: the page's bytes forwarded plus the steps no implementation may leave out (validate-access,
    // the started and end lines on disk), the required-steps floor. The first shows what being a proxy at all costs.
    const one = [
      { url: apiUrl, pid: serve.pid as number, what: 'the API (serve)' },
      { url: bigPassUrl, pid: bigPass.pid as number, what: "a pass-through forwarding the page's bytes (a lower bound, not a target)" },
      { url: stepsUrl, pid: stepsPass.pid as number, what: 'the same pass-through plus validate-access and the two synced audit lines (the required-steps floor)' },
    ];
    const oneRow = await interleaved(one, 1000, { direct: () => rawFetch(s, agent, 1000), what: 'undici fetching the FHIR page directly' });
    rows.push(...oneRow.rows);
    await agent.close();

    // 40 pages of 50 through the second serve, next to the audited pass-through (the answer's shape plus the same steps:
    // the target's floor, issue 49), the byte-forwarding pass-through with the steps, and the pass-through with no steps.
    const many = [
      { url: smallUrl, pid: smallServe.pid as number, what: 'the API (serve, FHIR_PAGE_SIZE=50)' },
      { url: auditedUrl, pid: auditedPass.pid as number, what: "an audited pass-through: the answer's shape plus validate-access and the two synced audit lines (the target's floor)" },
      { url: smallStepsUrl, pid: smallStepsPass.pid as number, what: "a pass-through forwarding the pages' bytes plus the same steps (a lower bound, not a target)" },
      { url: passUrl, pid: pass.pid as number, what: "a pass-through of the answer's shape with no steps (no platform call, no audit; not a target)" },
    ];
    const manyRow = await interleaved(many, SMALL_PAGES.size, 1);
    rows.push(...manyRow.rows);

    const [oneApi, , oneSteps] = oneRow.stats as [Stats, Stats, Stats];
    const [manyApi, manyAudited] = manyRow.stats as [Stats, Stats];
    const oneRatio = round(oneApi.p50 / oneSteps.p50, 2);
    const manyRatio = round(manyApi.p50 / manyAudited.p50, 2);
    const rssRatio = round((rss[10_000] as number) / (rss[100] as number), 2);
    const hugeRatio = round((rss[HUGE] as number) / (rss[100] as number), 2);
    const p50 = (x: Stats) => `p50 ${round(x.p50, 2)} ms (CPU ${round(x.cpu, 2)} ms/request)`;
    return {
      name: 'api',
      description:
        `POST /api/patients through a real serve child, started as the product starts it (${COMPONENT_NODE_ARGS.join(' ')}, ${Object.entries(API_MALLOC_ENV).map(([k, v]) => `${k}=${v}`).join(' ')}; platform + FHIR stand-ins in another process, FHIR over HTTPS, ` +
        `audit log on the same disk as the bench's temp dir, synced twice per record), ` +
        `${RUNS} runs per case after ${WARMUP} warm-ups, sequential, the rows of one case interleaved request by request (100,000: ${HUGE_RUNS} runs, for memory). ` +
        `Targets (issue 49) are ratios to a floor measured in the same run: at 1,000 resources in one page, the pass-through forwarding ` +
        `the page's bytes plus validate-access and the two synced audit lines (the required-steps floor); at 2,000 in 40 pages of 50, ` +
        `the audited pass-through (the answer's shape plus the same steps); peak RSS (the serve process's VmHWM after each size, in order) against the RSS after 100. ` +
        `The rows of 100 to 100,000 resources are timed against undici fetching and parsing the same FHIR pages (_count=${PAGE}) directly (not targets since issue 49). ` +
        `CPU is each server process's user + system time over the timed runs, per request (10 ms ticks): steadier than wall time under load. ` +
        `Load average at the start: ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}; at the end: ${loadavg().map((l) => l.toFixed(1)).join(' ')}.`,
      rows,
      targets: [
        {
          name: 'API at 1,000 resources (1 page), p50 / required-steps floor',
          value: oneRatio,
          target: '<= 1.10',
          met: oneRatio <= 1.1,
          floor: `pass-through + validate-access + 2 synced audit lines: ${p50(oneSteps)}`,
          figure: `API: ${p50(oneApi)}; CPU ratio ${round(oneApi.cpu / oneSteps.cpu, 2)}`,
        },
        {
          name: 'API at 2,000 resources (40 pages of 50), p50 / audited pass-through',
          value: manyRatio,
          target: '<= 1.10',
          met: manyRatio <= 1.1,
          floor: `audited pass-through: ${p50(manyAudited)}`,
          figure: `API: ${p50(manyApi)}; CPU ratio ${round(manyApi.cpu / manyAudited.cpu, 2)}`,
        },
        {
          name: 'serve peak RSS after 10,000 / after 100',
          value: rssRatio,
          target: '<= 1.5',
          met: rssRatio <= 1.5,
          floor: `after 100: ${rss[100]} MiB`,
          figure: `after 10,000: ${rss[10_000]} MiB`,
        },
        {
          name: 'serve peak RSS after 100,000 / after 100',
          value: hugeRatio,
          target: '<= 2',
          met: hugeRatio <= 2,
          floor: `after 100: ${rss[100]} MiB`,
          figure: `after 100,000: ${rss[HUGE]} MiB`,
        },
      ],
    };
  } finally {
    for (const c of children) c.kill('SIGTERM');
    standIn.kill('SIGTERM');
    await Promise.allSettled([...children, standIn]);
    rmSync(dir, { recursive: true, force: true });
  }
}
