/**
 * The Kong and HAPI stand-ins with several replicas on one Postgres, for real
 * (issue 29, replicas on Docker Swarm): containers of the tier's images on one
 * user-defined network of the engine, no swarm. What the real images do and the
 * stand-ins must reproduce (images/kong/kong.mjs, images/hapi/hapi.mjs):
 * - Kong: a write through one node's admin API is in the database before the
 *   answer, and another node serves it within its db_update_frequency;
 * - HAPI: a resource written through one replica is read through another at once;
 *   the writer killed with SIGKILL, another replica becomes the writer and has
 *   every write that was answered; `java -cp /app HealthCheck` (the real image's
 *   health check) exits 0 while /actuator/health says UP and 1 otherwise.
 * Everything it creates (containers, their anonymous volumes, the network) is
 * removed at the end, also when a case fails.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

const RUN = `standins-${randomBytes(3).toString('hex')}`;
const LABEL = `hospital-api.test=${RUN}`;
const NET = `${RUN}-net`;
const KONG_PASSWORD = randomBytes(18).toString('base64url');
const HAPI_PASSWORD = randomBytes(18).toString('base64url');
/** KONG_DB_UPDATE_FREQUENCY of both kong replicas (seconds). */
const POLL_S = 2;
const name = (n: string) => `${RUN}-${n}`;

const KONG_ENV = {
  KONG_DATABASE: 'postgres',
  KONG_PG_HOST: name('kong-db'),
  KONG_PG_USER: 'kong',
  KONG_PG_DATABASE: 'kong',
  KONG_PG_PASSWORD: KONG_PASSWORD,
  KONG_PROXY_LISTEN: '0.0.0.0:8000',
  KONG_ADMIN_LISTEN: '127.0.0.1:8001',
  KONG_STATUS_LISTEN: 'off',
  KONG_DB_UPDATE_FREQUENCY: String(POLL_S),
};
const HAPI_ENV = {
  SPRING_DATASOURCE_URL: `jdbc:postgresql://${name('hapi-db')}:5432/hapi`,
  SPRING_DATASOURCE_USERNAME: 'hapi',
  SPRING_DATASOURCE_PASSWORD: HAPI_PASSWORD,
  HIBERNATE_DIALECT: 'ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect',
};

const envFlags = (env: Record<string, string>) => Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);

async function run(n: string, image: string, env: Record<string, string>, extra: string[] = [], command: string[] = []): Promise<void> {
  await docker(['run', '-d', '--name', name(n), '--label', LABEL, '--network', NET, ...envFlags(env), ...extra, image, ...command]);
}

/** The host port Docker published a container port on (127.0.0.1 only). */
async function published(n: string, port: number): Promise<number> {
  const out = (await docker(['port', name(n), `${port}/tcp`])).out.trim().split('\n')[0] ?? '';
  return Number(out.slice(out.lastIndexOf(':') + 1));
}

async function postgres(n: string, user: string, password: string): Promise<void> {
  await run(n, TIER_IMAGES.postgres, { POSTGRES_USER: user, POSTGRES_PASSWORD: password, POSTGRES_DB: user });
  await until(async () => (await docker(['exec', name(n), 'pg_isready', '-h', '127.0.0.1', '-U', user], { allowFail: true })).code === 0, {
    what: `${n} accepting connections`,
    timeoutMs: 120_000,
    intervalMs: 500,
  });
}

async function sql(n: string, user: string, password: string, query: string): Promise<string> {
  return (await docker(['exec', '-e', `PGPASSWORD=${password}`, name(n), 'psql', '-X', '-q', '-t', '-A', '-h', '127.0.0.1', '-U', user, '-d', user, '-c', query])).out.trim();
}

/** A request to a kong replica's admin API from inside its container (127.0.0.1 there, never published), as install makes it. */
async function admin(n: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const script = `const r = await fetch('http://127.0.0.1:8001${path}', { method: '${method}', headers: { 'content-type': 'application/json' }, body: process.env.BODY || undefined }); process.stdout.write(JSON.stringify({ status: r.status, body: await r.text() }));`;
  const res = await docker(['exec', '-e', `BODY=${body === undefined ? '' : JSON.stringify(body)}`, name(n), 'node', '--input-type=module', '-e', script]);
  const parsed = JSON.parse(res.out) as { status: number; body: string };
  return { status: parsed.status, body: parsed.body ? JSON.parse(parsed.body) : null };
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  const res = await request(url, { headers, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await res.body.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.statusCode, headers: res.headers, body };
}

async function logs(n: string): Promise<string> {
  const l = await docker(['logs', name(n)], { allowFail: true });
  return l.out + l.err;
}

async function removeAll(): Promise<void> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=${LABEL}`], { allowFail: true })).out.split('\n').filter(Boolean);
  if (ids.length > 0) await docker(['rm', '-f', '-v', ...ids], { allowFail: true });
  await docker(['network', 'rm', NET], { allowFail: true });
}

describe.skipIf(!engine)('the stand-ins with several replicas on one Postgres (issue 29)', () => {
  beforeAll(async () => {
    await docker(['network', 'create', '--label', LABEL, NET]);
    await Promise.all([postgres('kong-db', 'kong', KONG_PASSWORD), postgres('hapi-db', 'hapi', HAPI_PASSWORD)]);
  }, 240_000);

  afterAll(async () => {
    await removeAll();
    // nothing of this run is left
    expect((await docker(['ps', '-aq', '--filter', `label=${LABEL}`])).out.trim()).toBe('');
    expect((await docker(['network', 'ls', '-q', '--filter', `name=${NET}`])).out.trim()).toBe('');
  }, 120_000);

  describe('hapi: one writer, the others forward to it', () => {
    const ports: Record<string, number> = {};
    const base = (n: string) => `http://127.0.0.1:${ports[n]}/fhir`;
    const health = async (n: string) => (await docker(['exec', name(n), 'java', '-cp', '/app', 'HealthCheck'], { allowFail: true })).code;

    beforeAll(async () => {
      // replica 1 first, so it is the writer; replica 2 then waits for the lock and forwards
      await run('hapi-1', TIER_IMAGES.hapi, { ...HAPI_ENV, STANDIN_SLOT: '1' }, ['-p', '127.0.0.1::8080']);
      ports['hapi-1'] = await published('hapi-1', 8080);
      await until(async () => /the writer \(at /.test(await logs('hapi-1')), { what: 'hapi-1 the writer', timeoutMs: 120_000, intervalMs: 500 });
      await until(() => health('hapi-1'), { what: 'hapi-1 healthy (java -cp /app HealthCheck)', ok: (c) => c === 0, timeoutMs: 120_000, intervalMs: 500 });
      await run('hapi-2', TIER_IMAGES.hapi, { ...HAPI_ENV, STANDIN_SLOT: '2' }, ['-p', '127.0.0.1::8080']);
      ports['hapi-2'] = await published('hapi-2', 8080);
      await until(async () => /a forwarder: another replica is the writer/.test(await logs('hapi-2')), { what: 'hapi-2 a forwarder', timeoutMs: 120_000, intervalMs: 500 });
      await until(() => health('hapi-2'), { what: 'hapi-2 healthy', ok: (c) => c === 0, timeoutMs: 120_000, intervalMs: 500 });
      expect(await logs('hapi-2')).not.toMatch(/the writer \(at /);
    }, 300_000);

    const patient = (i: number) => ({ resourceType: 'Patient', identifier: [{ system: 'urn:standins', value: `p-${i}` }], name: [{ family: `Replica${i}` }] });
    async function create(n: string, i: number): Promise<{ status: number; id: string; location: string }> {
      const res = await request(`${base(n)}/Patient`, { method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body: JSON.stringify(patient(i)), headersTimeout: 30_000, bodyTimeout: 30_000 });
      const body = (await res.body.json()) as { id: string };
      return { status: res.statusCode, id: body.id, location: String(res.headers.location ?? res.headers['content-location'] ?? '') };
    }

    it('a resource written through replica 2 is read through replica 1 at once, with the links its caller used', async () => {
      const made = await create('hapi-2', 0);
      expect(made.status).toBe(201);
      // HAPI names the resource at the address the caller used (the Host it sent to replica 2)
      expect(made.location).toContain(`http://127.0.0.1:${ports['hapi-2']}/fhir/Patient/${made.id}`);
      const read = await get(`${base('hapi-1')}/Patient/${made.id}`);
      expect(read.status).toBe(200);
      expect(read.body.name[0].family).toBe('Replica0');
      const search = await get(`${base('hapi-2')}/Patient?identifier=urn:standins|p-0`);
      expect(search.body.total ?? search.body.entry?.length).toBe(1);
      expect(search.body.link[0].url).toContain(`http://127.0.0.1:${ports['hapi-2']}/fhir/Patient`);
    });

    it('java -cp /app HealthCheck: 0 while /actuator/health is UP, 1 when it is not or nothing answers', async () => {
      const up = await get(`http://127.0.0.1:${ports['hapi-1']}/actuator/health`);
      expect(up).toMatchObject({ status: 200, body: { status: 'UP' } });
      expect(await health('hapi-1')).toBe(0);
      // the writer's FHIR server stopped (SIGSTOP): its health is DOWN, the check fails, and passes again after SIGCONT
      const top = (await docker(['top', name('hapi-1'), '-eo', 'pid,args'])).out;
      const line = top.split('\n').find((l) => l.includes('hapi-server.mjs'));
      expect(line, top).toBeDefined();
      const pid = Number(line!.trim().split(/\s+/)[0]);
      process.kill(pid, 'SIGSTOP');
      try {
        const down = await get(`http://127.0.0.1:${ports['hapi-1']}/actuator/health`);
        expect(down).toMatchObject({ status: 503, body: { status: 'DOWN' } });
        expect(await health('hapi-1')).toBe(1);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      expect(await health('hapi-1')).toBe(0);
      // another class than HealthCheck, and a container where nothing listens on 8080
      expect((await docker(['exec', name('hapi-1'), 'java', '-cp', '/app', 'Other'], { allowFail: true })).code).toBe(1);
      expect((await docker(['run', '--rm', '--label', LABEL, '--network', 'none', '--entrypoint', 'java', TIER_IMAGES.hapi, '-cp', '/app', 'HealthCheck'], { allowFail: true })).code).toBe(1);
    });

    it('the writer killed with SIGKILL: replica 2 becomes the writer with every write that was answered', async () => {
      // writes through both replicas at once; each answered 201 is acknowledged
      const made = await Promise.all(Array.from({ length: 24 }, (_, i) => create(i % 2 === 0 ? 'hapi-1' : 'hapi-2', i + 1)));
      expect(made.map((m) => m.status)).toEqual(made.map(() => 201));
      await docker(['kill', '-s', 'KILL', name('hapi-1')]);
      const t0 = Date.now();
      await until(async () => (await get(`${base('hapi-2')}/Patient?_count=1`)).status === 200, { what: 'hapi-2 serving as the writer', timeoutMs: 60_000, intervalMs: 200 });
      const tookMs = Date.now() - t0;
      process.stdout.write(`standins: hapi-2 served as the writer ${tookMs} ms after the writer's SIGKILL (load ${readFileSync('/proc/loadavg', 'utf8').trim()})\n`);
      expect(await logs('hapi-2')).toMatch(/the writer \(at /);
      for (const m of made) {
        const read = await get(`${base('hapi-2')}/Patient/${m.id}`);
        expect(read.status, `Patient/${m.id}`).toBe(200);
      }
      // the first write of all, too
      const all = await get(`${base('hapi-2')}/Patient?identifier=urn:standins|p-0`);
      expect(all.body.total ?? all.body.entry?.length).toBe(1);
      // the killed replica started again forwards to the new writer, and reads what it wrote
      await docker(['start', name('hapi-1')]);
      ports['hapi-1'] = await published('hapi-1', 8080);
      await until(() => health('hapi-1'), { what: 'hapi-1 healthy again', ok: (c) => c === 0, timeoutMs: 120_000, intervalMs: 500 });
      const again = await create('hapi-1', 99);
      expect(again.status).toBe(201);
      expect((await get(`${base('hapi-2')}/Patient/${again.id}`)).status).toBe(200);
      expect((await get(`${base('hapi-1')}/Patient/${made[0]!.id}`)).status).toBe(200);
    }, 300_000);
  });

  describe('kong: every node follows the database', () => {
    const ports: Record<string, number> = {};

    beforeAll(async () => {
      await docker(['run', '--rm', '--label', LABEL, '--network', NET, ...envFlags(KONG_ENV), TIER_IMAGES.kong, 'kong', 'migrations', 'bootstrap']);
      for (const n of ['kong-a', 'kong-b']) await run(n, TIER_IMAGES.kong, KONG_ENV, ['-p', '127.0.0.1::8000']);
      for (const n of ['kong-a', 'kong-b']) {
        ports[n] = await published(n, 8000);
        await until(async () => (await docker(['exec', name(n), 'kong', 'health'], { allowFail: true })).code === 0, { what: `${n} healthy`, timeoutMs: 120_000, intervalMs: 500 });
      }
    }, 300_000);

    const proxied = async (n: string, path: string) => (await get(`http://127.0.0.1:${ports[n]}${path}`)).status;

    it('a route added through kong-a is stored before the answer and served by kong-b within db_update_frequency', async () => {
      expect(await proxied('kong-b', '/fhir/metadata')).toBe(404);
      const before = Number((await sql('kong-db', 'kong', KONG_PASSWORD, "SELECT serial FROM standin_blob WHERE name = 'kong-state'")) || 0);
      const svc = await admin('kong-a', 'POST', '/services', { name: 'fhir', url: `http://${name('hapi-2')}:8080/fhir` });
      expect(svc.status).toBe(201);
      const route = await admin('kong-a', 'POST', '/services/fhir/routes', { name: 'fhir-route', paths: ['/fhir'] });
      expect(route.status).toBe(201);
      const answeredAt = Date.now();
      // in Postgres already when the admin API answered
      expect(Number(await sql('kong-db', 'kong', KONG_PASSWORD, "SELECT serial FROM standin_blob WHERE name = 'kong-state'"))).toBe(before + 2);
      const stored = Buffer.from(await sql('kong-db', 'kong', KONG_PASSWORD, "SELECT data FROM standin_blob WHERE name = 'kong-state'"), 'base64').toString('utf8');
      expect(JSON.parse(stored).config.routes.map((r: { name: string }) => r.name)).toEqual(['fhir-route']);
      await until(() => proxied('kong-b', '/fhir/metadata'), { what: 'kong-b serving the route', ok: (s) => s === 200, timeoutMs: POLL_S * 1000 + 3000, intervalMs: 100 });
      process.stdout.write(`standins: kong-b served kong-a's route ${Date.now() - answeredAt} ms after the admin answer (db_update_frequency ${POLL_S} s; load ${readFileSync('/proc/loadavg', 'utf8').trim()})\n`);
      expect(await proxied('kong-a', '/fhir/metadata')).toBe(200);
      // kong-b's own admin API reads it too, and a write there reaches kong-a
      expect((await admin('kong-b', 'GET', '/routes/fhir-route')).status).toBe(200);
      const consumer = await admin('kong-b', 'POST', '/consumers', { username: 'from-b' });
      expect(consumer.status).toBe(201);
      await until(async () => (await admin('kong-a', 'GET', '/consumers/from-b')).status, { what: 'kong-a reading kong-b\'s consumer', ok: (s) => s === 200, timeoutMs: POLL_S * 1000 + 3000, intervalMs: 200 });
    }, 120_000);

    it('a node started later, and one killed and started again, serve what is in the database', async () => {
      await docker(['kill', '-s', 'KILL', name('kong-a')]);
      await docker(['start', name('kong-a')]);
      ports['kong-a'] = await published('kong-a', 8000);
      await until(async () => (await docker(['exec', name('kong-a'), 'kong', 'health'], { allowFail: true })).code === 0, { what: 'kong-a healthy again', timeoutMs: 120_000, intervalMs: 500 });
      expect(await proxied('kong-a', '/fhir/metadata')).toBe(200);
      expect((await admin('kong-a', 'GET', '/consumers/from-b')).status).toBe(200);
    }, 180_000);
  });
});
