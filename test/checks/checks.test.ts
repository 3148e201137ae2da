/**
 * Each acceptance check on its own, against the stand-ins (real sockets, a real
 * certificate from the install's CA) with the installation intact AND broken the
 * way the check exists to catch, so every check is seen to pass and to fail;
 * then the runner (order, crash guard, time-out), the accept rule and the table.
 * The end-to-end version on a real installation is test/e2e/broken-install.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { runInstall } from '../../src/install/run.js';
import { endpoints, readInstallConfig, type InstallConfig } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import type { ComponentState } from '../../src/runtime/types.js';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { describeCertificate } from '../../src/tls/inspect.js';
import { X509Certificate } from 'node:crypto';
import { freePort } from '../../src/util/port-check.js';
import { CHECKS } from '../../src/checks/list.js';
import { adminNotExposed } from '../../src/checks/admin-not-exposed.js';
import { apiHealth } from '../../src/checks/api-health.js';
import { basicAuthRequired } from '../../src/checks/basic-auth-required.js';
import { certificateChain } from '../../src/checks/certificate-chain.js';
import { certificateExpiry } from '../../src/checks/certificate-expiry.js';
import { componentsUp } from '../../src/checks/components-up.js';
import { fhirMetadata } from '../../src/checks/fhir-metadata.js';
import { gatewayObjects } from '../../src/checks/gateway-objects.js';
import { keyAuthMetadata } from '../../src/checks/key-auth-metadata.js';
import { gatewayNodes } from '../../src/checks/gateway-nodes.js';
import { keyAuthNoKey } from '../../src/checks/key-auth-no-key.js';
import { keyAuthWrongKey } from '../../src/checks/key-auth-wrong-key.js';
import { describeFailure, httpGet, isCapabilityStatement, isTlsFailure } from '../../src/checks/http.js';
import { formatCheckProgress, renderChecks } from '../../src/checks/render.js';
import { allMandatoryPass, runChecks } from '../../src/checks/runner.js';
import type { Check, CheckContext, CheckResult } from '../../src/checks/types.js';
import { createRunFacts } from '../../src/checks/facts.js';
import { colourFor } from '../../src/output/colour.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { closeGatewayAdmins, gatewayAdmin, type GatewayAdmin } from '../helpers/gateway-admin.js';
import type { GatewayConfig, Plugin, Route } from '../../src/gateway/model/types.js';
import { fakeRuntime, intactAnswers, intactComponents, startStandIns, testPorts, type Answers } from '../install/stand-ins.js';

const KEY = 'k'.repeat(32);
let kong: GatewayAdmin;
let dir = '';
let config: InstallConfig;
let caPem = '';
let agent: Agent;
let components: ComponentState[];
let answers: Answers;
let stack: { close(): Promise<void> };
let pristine: Plugin[];

beforeAll(async () => {
  kong = await gatewayAdmin();
  dir = join(tempDir(), 'inst');
  const ports = await testPorts();
  const flags = Object.fromEntries(Object.entries(ports).map(([k, v]) => [`${k}Port`, String(v)]));
  await runInstall(
    { runtime: 'native', dir, host: ['127.0.0.1'], generateCa: true, ...flags },
    { log: () => {}, openRuntime: () => fakeRuntime(kong) },
  );
  expect((await kong.admin('PUT', '/consumers/hospital-a', {})).status).toBe(200);
  expect((await kong.admin('POST', '/consumers/hospital-a/key-auth', { key: KEY })).status).toBe(201);
  pristine = structuredClone(kong.state().plugins) as Plugin[];
  config = readInstallConfig(dir);
  const p = installPaths(dir);
  caPem = readFileSync(p.caCert, 'utf8');
  agent = new Agent({ connect: { ca: caPem, rejectUnauthorized: true } });
  answers = intactAnswers();
  stack = await startStandIns(kong, ports, { certPem: readFileSync(p.gatewayCert, 'utf8'), keyPem: readFileSync(p.gatewayKey, 'utf8') }, answers);
});

afterAll(async () => {
  await stack?.close();
  await agent?.close();
  await closeGatewayAdmins();
  removeTempDirs();
});

beforeEach(() => {
  // every test starts from the intact installation
  kong.change((d) => void (d.plugins = structuredClone(pristine)));
  Object.assign(answers, intactAnswers());
  components = intactComponents();
});

function ctx(over: Partial<CheckContext> & { config?: InstallConfig } = {}): CheckContext {
  const c = over.config ?? config;
  const base = {
    dir,
    paths: installPaths(dir),
    config: c,
    runtime: fakeRuntime(kong, [], components),
    urls: endpoints(c),
    caPem,
    caPath: installPaths(dir).caCert,
    apiKey: KEY,
    https: agent,
    ...over,
  };
  return { facts: createRunFacts(base), ...base };
}

/** An undici Agent that keeps the options of every request it dispatches (then dispatches it for real). */
function recordingDispatcher(): { agent: Agent; options: Dispatcher.DispatchOptions[] } {
  const options: Dispatcher.DispatchOptions[] = [];
  class Recording extends Agent {
    override dispatch(opts: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
      options.push(opts);
      return super.dispatch(opts, handler);
    }
  }
  return { agent: new Recording(), options };
}

/** The install's config with one port moved to where nothing listens. */
async function closedPort(port: keyof InstallConfig['ports']): Promise<InstallConfig> {
  return { ...config, ports: { ...config.ports, [port]: await freePort() } };
}

const serviceId = (d: Readonly<GatewayConfig>, name: string) => d.services.find((s) => s.name === name)!.id;
const pluginIn = (d: Readonly<GatewayConfig>, service: string, name: string) => d.plugins.find((p) => p.name === name && p.service?.id === serviceId(d, service))!;
/** Edits a plugin, or a route, in the gateway's store: states the admin API itself would refuse to make. */
const editPlugin = (service: string, name: string, edit: (p: Plugin, d: GatewayConfig) => void) => kong.change((d) => edit(pluginIn(d, service, name), d));
const editRoute = (name: string, edit: (r: Route, d: GatewayConfig) => void) => kong.change((d) => edit(d.routes.find((r) => r.name === name)!, d));
const remove = (service: string, name: string) => kong.change((d) => void d.plugins.splice(d.plugins.indexOf(pluginIn(d, service, name)), 1));

describe('components-up (§4.5.1)', () => {
  it('passes when every component is up, naming them', async () => {
    const r = await componentsUp.run(ctx());
    expect(r).toMatchObject({ status: 'pass', summary: '3 up: fhir, gateway, api' });
    expect(r.detail).toBe('fhir: up (stand-in); gateway: up (stand-in); api: up (stand-in)');
  });

  it.each(['down', 'exited', 'restarting', 'starting'] as const)('fails when a component is %s', async (state) => {
    components[2] = { name: 'api', state, detail: 'killed by SIGKILL' };
    const r = await componentsUp.run(ctx());
    expect(r).toMatchObject({ status: 'fail', summary: 'not up: api' });
    expect(r.detail).toContain(`api: ${state} (killed by SIGKILL)`);
    expect(r.hint).toMatch(/hospital-api status/);
  });

  it('names every component that is not up', async () => {
    components[0] = { name: 'fhir', state: 'down', detail: '' };
    components[1] = { name: 'gateway', state: 'exited', detail: '' };
    expect((await componentsUp.run(ctx())).summary).toBe('not up: fhir, gateway');
  });

  it('fails when nothing runs at all', async () => {
    components.splice(0);
    expect(await componentsUp.run(ctx())).toEqual({ status: 'fail', summary: 'no component is running', detail: '', hint: 'Start the stack: `hospital-api up`.' });
  });

  it('a degraded gateway (serving its last good state) is not up: named with its reason, and the hint says what to fix', async () => {
    components[1] = { name: 'gateway', state: 'degraded', detail: 'degraded: state file invalid (routes[0].paths)' };
    expect(await componentsUp.run(ctx())).toEqual({
      status: 'fail',
      summary: 'degraded: gateway (state file invalid (routes[0].paths))',
      detail: 'fhir: up (stand-in); gateway: degraded (degraded: state file invalid (routes[0].paths)); api: up (stand-in)',
      hint: 'See `hospital-api status`; fix the gateway state file (or restore it from a backup) before the next restart.',
    });
    // two degraded: both named; a leading "degraded: " goes, one inside the reason stays
    components[0] = { name: 'fhir', state: 'degraded', detail: 'was degraded: before' };
    expect((await componentsUp.run(ctx())).summary).toBe('degraded: fhir (was degraded: before); gateway (state file invalid (routes[0].paths))');
    components[0] = { name: 'fhir', state: 'up', detail: 'stand-in' };
    // beside a component that is down, the down one is named and the usual hint given
    components[2] = { name: 'api', state: 'down', detail: '' };
    expect(await componentsUp.run(ctx())).toMatchObject({
      status: 'fail', summary: 'not up: gateway, api', hint: 'See `hospital-api status` and `hospital-api logs <component>`.',
    });
  });
});

describe('api-health (§4.5.2)', () => {
  it('passes on 200 {}', async () => {
    const r = await apiHealth.run(ctx());
    expect(r).toEqual({ status: 'pass', summary: '200 {}', detail: `GET ${endpoints(config).apiBase}/api/health-check`, httpStatus: 200 });
  });

  it('fails on a 200 that is not {}, showing what came back', async () => {
    answers.health = { status: 200, body: { status: 'UP' } };
    const r = await apiHealth.run(ctx());
    expect(r).toMatchObject({ status: 'fail', summary: '200 {"status":"UP"}', httpStatus: 200, hint: 'See `hospital-api logs api`.' });
  });

  it('fails on {} with another status, and cuts a long answer to 80 characters', async () => {
    answers.health = { status: 503, body: {} };
    expect((await apiHealth.run(ctx())).summary).toBe('503 {}');
    answers.health = { status: 200, body: 'x'.repeat(200) };
    expect((await apiHealth.run(ctx())).summary).toBe(`200 ${JSON.stringify('x'.repeat(200)).slice(0, 80)}`);
  });

  it('fails with "no answer" when nothing listens', async () => {
    const r = await apiHealth.run(ctx({ config: await closedPort('api') }));
    expect(r).toMatchObject({ status: 'fail', summary: 'no answer', hint: 'Is the Hospital API running?' });
    expect(r.detail).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+\/api\/health-check: ECONNREFUSED/);
  });
});

describe('fhir-metadata (§4.5.2)', () => {
  it('passes on a CapabilityStatement, with its FHIR version', async () => {
    expect(await fhirMetadata.run(ctx())).toEqual({
      status: 'pass', summary: 'CapabilityStatement (FHIR 4.0.1)', detail: `GET ${endpoints(config).fhirBase}/metadata`, httpStatus: 200,
    });
    answers.metadata = { status: 200, body: { resourceType: 'CapabilityStatement' } };
    expect((await fhirMetadata.run(ctx())).summary).toBe('CapabilityStatement (FHIR ?)');
  });

  it('fails on another resource, another status or no JSON', async () => {
    answers.metadata = { status: 200, body: { resourceType: 'OperationOutcome' } };
    expect(await fhirMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '200, not a CapabilityStatement', httpStatus: 200 });
    answers.metadata = { status: 500, body: { resourceType: 'CapabilityStatement' } };
    expect(await fhirMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '500, not a CapabilityStatement' });
    answers.metadata = { status: 200, body: null };
    expect(await fhirMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '200, not a CapabilityStatement', httpStatus: 200 });
  });

  it("gives a slow FHIR server 30 s (HAPI's first /metadata builds its CapabilityStatement)", async () => {
    const seen = recordingDispatcher();
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(seen.agent);
    try {
      expect((await fhirMetadata.run(ctx())).status).toBe('pass');
    } finally {
      setGlobalDispatcher(previous);
      await seen.agent.close();
    }
    expect(seen.options).toEqual([expect.objectContaining({ headersTimeout: 30_000, bodyTimeout: 30_000 })]);
  });

  it('fails with "no answer" when nothing listens', async () => {
    expect(await fhirMetadata.run(ctx({ config: await closedPort('fhir') }))).toMatchObject({
      status: 'fail', summary: 'no answer', hint: 'Is the FHIR server running?', detail: expect.stringContaining('ECONNREFUSED'),
    });
  });
});

describe('gateway-objects (§4.5.3)', () => {
  it('passes on the provisioned gateway', async () => {
    const r = await gatewayObjects.run(ctx());
    expect(r).toEqual({
      status: 'pass', summary: 'fhir-api (basic-auth, cors), fhir-api-key-auth (key-auth) and both routes',
      detail: '2 services, 2 routes, 6 plugins', httpStatus: 200,
    });
  });

  it.each([
    ['basic-auth removed', () => remove('fhir-api', 'basic-auth'), 'basic-auth not attached to fhir-api'],
    ['cors removed', () => remove('fhir-api', 'cors'), 'cors not attached to fhir-api'],
    ['key-auth removed', () => remove('fhir-api-key-auth', 'key-auth'), 'key-auth not attached to fhir-api-key-auth'],
    ['basic-auth disabled', () => editPlugin('fhir-api', 'basic-auth', (p) => void (p.enabled = false)), 'basic-auth on fhir-api is disabled'],
    ['key-auth disabled', () => editPlugin('fhir-api-key-auth', 'key-auth', (p) => void (p.enabled = false)), 'key-auth on fhir-api-key-auth is disabled'],
    ['key-auth moved to fhir-api', () => editPlugin('fhir-api-key-auth', 'key-auth', (p, d) => void (p.service = { id: serviceId(d, 'fhir-api') })),
      'key-auth not attached to fhir-api-key-auth'],
  ])('fails when %s', async (_what, breakIt, problem) => {
    breakIt();
    const r = await gatewayObjects.run(ctx());
    expect(r).toMatchObject({ status: 'fail', summary: problem, httpStatus: 200, hint: 'Rerun `hospital-api install` (idempotent).' });
  });

  it('fails when a route also takes plain http, or names no protocols (Kong then takes http and https)', async () => {
    const name = 'fhir-api-key-auth-route';
    expect(kong.state().routes.find((r) => r.name === name)!.protocols).toEqual(['https']);
    editRoute(name, (r) => void (r.protocols = ['http', 'https']));
    expect(await gatewayObjects.run(ctx())).toMatchObject({
      status: 'fail', summary: 'route fhir-api-key-auth-route also takes http (credentials must travel over https only)',
    });
    editRoute(name, (r) => void (r.protocols = ['http', 'grpc', 'https']));
    expect((await gatewayObjects.run(ctx())).summary).toBe('route fhir-api-key-auth-route also takes http, grpc (credentials must travel over https only)');
    editRoute(name, (r) => void delete (r as Partial<Route>).protocols);
    expect((await gatewayObjects.run(ctx())).summary).toBe('route fhir-api-key-auth-route also takes http (credentials must travel over https only)');
    editRoute(name, (r) => void (r.protocols = ['https']));
    expect((await gatewayObjects.run(ctx())).status).toBe('pass');
  });

  it('a disabled plugin beside an enabled one of the same name is enough', async () => {
    kong.change((d) => void d.plugins.unshift({ ...structuredClone(pluginIn(d, 'fhir-api', 'cors')), id: randomUUID(), enabled: false }));
    expect((await gatewayObjects.run(ctx())).status).toBe('pass');
  });

  it('fails on a renamed route, a route on the wrong service and a missing service, listing every problem', async () => {
    const saved = structuredClone({ services: kong.state().services, routes: kong.state().routes }) as Pick<GatewayConfig, 'services' | 'routes'>;
    try {
      editRoute('fhir-api-key-auth-route', (r) => void (r.name = 'renamed'));
      expect((await gatewayObjects.run(ctx())).summary).toBe('route fhir-api-key-auth-route missing');
      editRoute('renamed', (r) => void (r.name = 'fhir-api-key-auth-route'));
      editRoute('fhir-api-route', (r, d) => void (r.service = { id: serviceId(d, 'fhir-api-key-auth') }));
      expect((await gatewayObjects.run(ctx())).summary).toBe('route fhir-api-route is not attached to fhir-api');
      kong.change((d) => void (d.services.find((s) => s.name === 'fhir-api')!.name = 'other'));
      expect((await gatewayObjects.run(ctx())).summary).toBe('service fhir-api missing');
      kong.change((d) => void d.routes.splice(0));
      expect((await gatewayObjects.run(ctx())).summary).toBe('service fhir-api missing; route fhir-api-route missing; route fhir-api-key-auth-route missing');
    } finally {
      kong.change((d) => void Object.assign(d, structuredClone(saved)));
    }
  });

  it('follows the admin API\'s `next` pages, and throws (an error result) when a list is refused', async () => {
    const runtime = fakeRuntime(kong, [], components);
    const seen: string[] = [];
    // one entity per page, as Kong pages with size=1
    const paged: typeof runtime.admin = async (method, path) => {
      seen.push(path);
      expect(method).toBe('GET');
      const [base, query] = path.split('?') as [string, string];
      const offset = Number(new URLSearchParams(query).get('offset') ?? 0);
      const all = ((await runtime.admin(method, base)).body as { data: unknown[] }).data;
      const next = offset + 1 < all.length ? `${base}?offset=${offset + 1}` : null;
      return { status: 200, body: { data: all.slice(offset, offset + 1), next } };
    };
    const r = await gatewayObjects.run(ctx({ runtime: { ...runtime, admin: paged } }));
    expect(r.status).toBe('pass');
    expect(r.detail).toBe('2 services, 2 routes, 6 plugins');
    expect(seen).toContain('/services?size=1000');
    expect(seen).toContain('/plugins?offset=2');
    const refused: typeof runtime.admin = async () => ({ status: 401, body: { message: 'Unauthorized' } });
    await expect(gatewayObjects.run(ctx({ runtime: { ...runtime, admin: refused } }))).rejects.toThrow(/^GET \/\w+\?size=1000 answered 401$/);
  });

  it('a route or a plugin with no service (Kong allows both) is not attached to anything', async () => {
    const saved = structuredClone(kong.state().routes.find((r) => r.name === 'fhir-api-route')!.service);
    try {
      editRoute('fhir-api-route', (r) => void (r.service = null));
      expect(await gatewayObjects.run(ctx())).toMatchObject({ status: 'fail', summary: 'route fhir-api-route is not attached to fhir-api' });
    } finally {
      editRoute('fhir-api-route', (r) => void (r.service = saved));
    }
    // basic-auth made global (service null): it is no longer fhir-api's
    editPlugin('fhir-api', 'basic-auth', (p) => void (p.service = null));
    expect(await gatewayObjects.run(ctx())).toMatchObject({ status: 'fail', summary: 'basic-auth not attached to fhir-api' });
  });

  it('a page without data is an empty page', async () => {
    const runtime = fakeRuntime(kong, [], components);
    const bare: typeof runtime.admin = async () => ({ status: 200, body: {} });
    expect(await gatewayObjects.run(ctx({ runtime: { ...runtime, admin: bare } }))).toMatchObject({
      status: 'fail', summary: 'service fhir-api missing; route fhir-api-route missing; service fhir-api-key-auth missing; route fhir-api-key-auth-route missing',
      detail: '0 services, 0 routes, 0 plugins',
    });
  });

  it('stops following `next` after 50 pages (a gateway that pages forever)', async () => {
    const runtime = fakeRuntime(kong, [], components);
    let calls = 0;
    const endless: typeof runtime.admin = async () => ({ status: 200, body: { data: [], next: `/x?offset=${++calls}` } });
    const r = await gatewayObjects.run(ctx({ runtime: { ...runtime, admin: endless } }));
    expect(calls).toBe(150);
    expect(r.status).toBe('fail');
  });
});

describe('gateway-nodes (§4.5.4 on every host that publishes the gateway)', () => {
  /** The runtime of a several-host install whose gateway hosts are `addresses` (each on the install's gateway port). */
  const onHosts = (...addresses: Array<string | null>) => ({
    ...fakeRuntime(kong, [], components),
    gatewayNodes: async () => addresses.map((address, i) => ({ node: `n${i + 1}`, address })),
  });

  it('is skipped on one host, where key-auth-metadata probed the only gateway', async () => {
    expect(await gatewayNodes.run(ctx())).toMatchObject({ status: 'skip' });
  });

  it("passes when the key reads metadata on each host, verified for the site's name, whatever address is dialled", async () => {
    const r = await gatewayNodes.run(ctx({ runtime: onHosts('127.0.0.1', '127.0.0.1') }));
    expect(r).toMatchObject({ status: 'pass', summary: '200 CapabilityStatement on 2 hosts: n1, n2' });
    expect(JSON.stringify(r)).not.toContain(KEY);
  });

  it('fails naming a host that does not answer, a key the gateway refuses, and a certificate for another name', async () => {
    // 127.0.0.2 is loopback too, but the stand-in gateway listens on 127.0.0.1 only
    const r = await gatewayNodes.run(ctx({ runtime: onHosts('127.0.0.1', '127.0.0.2') }));
    expect(r).toMatchObject({ status: 'fail', summary: 'not on n2 of 2 hosts' });
    expect(r.detail).toMatch(/^n1 127\.0\.0\.1: 200 CapabilityStatement; n2 127\.0\.0\.2: ECONNREFUSED/);
    expect(await gatewayNodes.run(ctx({ runtime: onHosts('127.0.0.1'), apiKey: 'not-a-credential-0000' }))).toMatchObject({ status: 'fail', detail: 'n1 127.0.0.1: 401' });
    // the certificate names 127.0.0.1 (the install's host), not this name
    const other = { ...config, hosts: ['gateway.elsewhere.example'] };
    const wrongName = await gatewayNodes.run(ctx({ config: other, runtime: onHosts('127.0.0.1') }));
    expect(wrongName).toMatchObject({ status: 'fail' });
    expect(wrongName.detail).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altnames/i);
    expect(await gatewayNodes.run(ctx({ runtime: onHosts() }))).toMatchObject({ status: 'fail', summary: 'no host publishes the gateway' });
    // a host with no known address is never passed over: it fails, named
    const unknown = await gatewayNodes.run(ctx({ runtime: onHosts('127.0.0.1', null) }));
    expect(unknown).toMatchObject({ status: 'fail', summary: 'not on n2 of 2 hosts' });
    expect(unknown.detail).toMatch(/n2: no address known/);
  });

  it("asks again within the runtime's propagation time for a key the proxies do not serve yet, and fails after it", async () => {
    const key = 'p'.repeat(32);
    const later = { ...onHosts('127.0.0.1', '127.0.0.1'), gatewayPropagationMs: 10_000 };
    // the key becomes a credential only after the first probes were refused
    const created = new Promise((resolve) => setTimeout(resolve, 1000)).then(() => kong.admin('POST', '/consumers/hospital-a/key-auth', { key }));
    const r = await gatewayNodes.run(ctx({ runtime: later, apiKey: key }));
    expect((await created).status).toBe(201);
    expect(r).toMatchObject({ status: 'pass', summary: '200 CapabilityStatement on 2 hosts: n1, n2' });
    expect(r.detail).toMatch(/asked again for \d+\.\d s: the gateway's proxies take up to 10 s to serve a change\)$/);
    // a key that never becomes one fails once that time has gone by, not before
    const t0 = Date.now();
    const never = await gatewayNodes.run(ctx({ runtime: { ...later, gatewayPropagationMs: 1500 }, apiKey: 'not-a-credential-0000' }));
    expect(never).toMatchObject({ status: 'fail', summary: 'not on n1, n2 of 2 hosts' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
  });
});

describe('key-auth-metadata (§4.5.4)', () => {
  it("passes with the Hospital API's key over HTTPS verified against the CA", async () => {
    const r = await keyAuthMetadata.run(ctx());
    expect(r).toEqual({
      status: 'pass', summary: '200 CapabilityStatement', httpStatus: 200,
      detail: `GET ${endpoints(config).gatewayHttps}/fhir-api-key-auth/metadata (apikey: FHIR_API_KEY, CA: ${installPaths(dir).caCert})`,
    });
    expect(JSON.stringify(r)).not.toContain(KEY);
  });

  it('fails without FHIR_API_KEY, saying how to make one', async () => {
    expect(await keyAuthMetadata.run(ctx({ apiKey: null }))).toEqual({
      status: 'fail', summary: 'FHIR_API_KEY is not set in hospital-api.env', detail: '',
      hint: 'Create the consumer: `hospital-api consumer create <name> --write-env`.',
    });
  });

  it("asks again within the runtime's propagation time for a key the gateway does not serve yet", async () => {
    const key = 'q'.repeat(32);
    const runtime = { ...fakeRuntime(kong, [], components), gatewayPropagationMs: 10_000 };
    const created = new Promise((resolve) => setTimeout(resolve, 1000)).then(() => kong.admin('POST', '/consumers/hospital-a/key-auth', { key }));
    const r = await keyAuthMetadata.run(ctx({ runtime, apiKey: key }));
    expect((await created).status).toBe(201);
    expect(r).toMatchObject({ status: 'pass', summary: '200 CapabilityStatement', httpStatus: 200 });
    expect(r.detail).toMatch(/asked again for \d+\.\d s/);
  });

  it('fails with 401 for a key that is no credential', async () => {
    const r = await keyAuthMetadata.run(ctx({ apiKey: 'not-a-credential-0000' }));
    expect(r).toMatchObject({ status: 'fail', summary: '401: the key is not accepted', httpStatus: 401, hint: expect.stringMatching(/consumer create --write-env/) });
  });

  it('fails on a 200 that is not a CapabilityStatement, and on another status', async () => {
    answers.metadata = { status: 200, body: { resourceType: 'Bundle' } };
    expect(await keyAuthMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '200', httpStatus: 200 });
    answers.metadata = { status: 502, body: { message: 'An invalid response was received from the upstream server' } };
    expect(await keyAuthMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '502', httpStatus: 502 });
    // a CapabilityStatement under another status (a cache or proxy in between) is not the gateway's 200
    answers.metadata = { status: 203, body: { resourceType: 'CapabilityStatement', fhirVersion: '4.0.1' } };
    expect(await keyAuthMetadata.run(ctx())).toMatchObject({ status: 'fail', summary: '203', httpStatus: 203 });
  });

  it('fails when the gateway certificate is not from the CA, or the gateway does not answer', async () => {
    const other = generateCa({ commonName: 'Unrelated CA' }).certPem;
    const wrongCa = new Agent({ connect: { ca: other, rejectUnauthorized: true } });
    try {
      const r = await keyAuthMetadata.run(ctx({ https: wrongCa, caPath: '/elsewhere/ca.pem' }));
      expect(r).toMatchObject({ status: 'fail', summary: 'the gateway certificate is not trusted by the CA', hint: expect.stringMatching(/--ca/) });
      expect(r.detail).toMatch(/\(CA: \/elsewhere\/ca\.pem\)$/);
    } finally {
      await wrongCa.close();
    }
    const closed = await closedPort('gatewayHttps');
    const r = await keyAuthMetadata.run(ctx({ config: closed }));
    expect(r).toMatchObject({ status: 'fail', summary: 'the gateway does not answer', hint: 'Is the gateway running?' });
    expect(r.detail.startsWith(`GET ${endpoints(closed).gatewayHttps}/fhir-api-key-auth/metadata: ECONNREFUSED: `)).toBe(true);
  });
});

describe('the 401 checks: key-auth-no-key, key-auth-wrong-key, basic-auth-required', () => {
  it('pass when the gateway refuses, quoting its message', async () => {
    expect(await keyAuthNoKey.run(ctx())).toEqual({
      status: 'pass', summary: '401 "No API key found in request"', httpStatus: 401, detail: `GET ${endpoints(config).gatewayHttps}/fhir-api-key-auth/metadata`,
    });
    expect(await keyAuthWrongKey.run(ctx())).toMatchObject({ status: 'pass', summary: '401 "Unauthorized"' });
    expect(await basicAuthRequired.run(ctx())).toMatchObject({ status: 'pass', summary: '401 "Unauthorized"', detail: `GET ${endpoints(config).gatewayHttps}/fhir-api/metadata` });
  });

  it('fail when the plugin is removed or disabled, with the status they got', async () => {
    remove('fhir-api-key-auth', 'key-auth');
    expect(await keyAuthNoKey.run(ctx())).toMatchObject({
      status: 'fail', summary: '200: a request without a key was not refused', httpStatus: 200, hint: 'Rerun `hospital-api install` to restore the gateway plugins.',
    });
    expect(await keyAuthWrongKey.run(ctx())).toMatchObject({ status: 'fail', summary: '200: a wrong key was not refused' });
    editPlugin('fhir-api', 'basic-auth', (p) => void (p.enabled = false));
    expect(await basicAuthRequired.run(ctx())).toMatchObject({ status: 'fail', summary: '200: a request without credentials was not refused' });
  });

  it('a 401 without a message is still a pass', async () => {
    remove('fhir-api', 'basic-auth');
    answers.metadata = { status: 401, body: null };
    expect(await basicAuthRequired.run(ctx())).toMatchObject({ status: 'pass', summary: '401' });
  });

  it('fail on TLS problems and an absent gateway like check 4', async () => {
    expect(await basicAuthRequired.run(ctx({ config: await closedPort('gatewayHttps') }))).toMatchObject({ status: 'fail', summary: 'the gateway does not answer' });
  });
});

describe('admin-not-exposed', () => {
  const address = Object.values(networkInterfaces()).flat().find((a) => a && !a.internal && a.family === 'IPv4')?.address;

  it.skipIf(!address)("passes when nothing answers on the host's other addresses, fails when the admin port does", async () => {
    const port = await freePort();
    const c = ctx({ config: { ...config, ports: { ...config.ports, gatewayAdmin: port } } });
    const closed = await adminNotExposed.run(c);
    expect(closed.status).toBe('pass');
    expect(closed.summary).toMatch(new RegExp(`^port ${port} closed on \\d+ address\\(es\\)$`));
    expect(closed.detail).toContain(address!);
    const server: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(port, address, resolve));
    try {
      const open = await adminNotExposed.run(c);
      expect(open).toMatchObject({ status: 'fail', summary: `admin port ${port} answers on ${address}`, hint: expect.stringMatching(/127\.0\.0\.1/) });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a listener on loopback only is not exposed', async () => {
    const server: Server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const r = await adminNotExposed.run(ctx({ config: { ...config, ports: { ...config.ports, gatewayAdmin: port } } }));
      expect(r.status).toBe(address ? 'pass' : 'skip');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('certificate-chain and certificate-expiry', () => {
  it('passes on the install certificate and keeps it for the record and the expiry check', async () => {
    const c = ctx();
    const r = await certificateChain.run(c);
    expect(r.status).toBe('pass');
    const cert = r.findings!.gatewayCertificate!;
    expect(cert.subject).toContain('127.0.0.1');
    expect(r.summary).toBe(`${cert.subject}, issued by ${cert.issuer}`);
    expect(r.detail).toBe(`SAN ${cert.subjectAltName}; SHA-256 ${cert.fingerprint256}`);
    expect(cert.fingerprint256).toBe(new X509Certificate(readFileSync(installPaths(dir).gatewayCert)).fingerprint256);
    expect(await certificateExpiry.run(c)).toMatchObject({ status: 'pass', summary: expect.stringMatching(/^valid until .* \(\d+ days\)$/) });
  });

  it('fails when verified against another CA (and leaves nothing for the record)', async () => {
    const c = ctx({ caPem: generateCa({ commonName: 'Unrelated CA' }).certPem, caPath: '/other/ca.pem' });
    const r = await certificateChain.run(c);
    expect(r).toMatchObject({ status: 'fail', summary: 'the gateway certificate does not verify', hint: expect.stringMatching(/SAN/) });
    expect(r.detail).toMatch(/^127\.0\.0\.1:\d+: .*\(CA: \/other\/ca\.pem\)$/);
    expect(r.findings).toBeUndefined();
    expect(await certificateExpiry.run(c)).toEqual({ status: 'skip', summary: 'no verified certificate to inspect', detail: '' });
  });

  it('fails when a further configured host is not named by the certificate', async () => {
    const r = await certificateChain.run(ctx({ config: { ...config, hosts: ['127.0.0.1', 'extra.example', '192.0.2.77'] } }));
    expect(r).toMatchObject({ status: 'fail', summary: 'the certificate does not name extra.example, 192.0.2.77' });
    expect(r.detail).toMatch(/IP Address:127\.0\.0\.1/);
  });

  it('fails when the gateway does not answer', async () => {
    const r = await certificateChain.run(ctx({ config: await closedPort('gatewayHttps') }));
    expect(r).toMatchObject({ status: 'fail', summary: 'the gateway does not answer', hint: 'Is the gateway running?' });
    expect(r.detail).toMatch(/ECONNREFUSED/);
  });

  it('expiry warns under 30 days and passes from 30 days on', async () => {
    const ca = generateCa();
    const info = (days: number) => {
      const cert = issueCertificate(ca, { commonName: 'h', hosts: ['h'], usage: 'server', days });
      return describeCertificate(new X509Certificate(cert.certPem));
    };
    const run = (cert: ReturnType<typeof info>) => {
      const c = ctx();
      return certificateExpiry.run({ ...c, facts: { ...c.facts, gatewayCertificate: async () => ({ x509: null as never, info: cert }) } });
    };
    const soon = info(10);
    expect(await run(soon)).toEqual({ status: 'warn', summary: `expires in 9 days (${soon.validTo})`, detail: '', hint: 'Renew the gateway certificate.' });
    // 30 days from now less a minute is 29 whole days; 30 days and an hour is 30
    const at = (ms: number) => ({ ...soon, validTo: new Date(Date.now() + ms).toUTCString() });
    expect((await run(at(30 * 86_400_000 - 60_000))).status).toBe('warn');
    expect(await run(at(30 * 86_400_000 + 3_600_000))).toMatchObject({ status: 'pass', summary: expect.stringMatching(/\(30 days\)$/), detail: '' });
    expect((await run(at(30 * 86_400_000 - 60_000))).hint).toBe('Renew the gateway certificate.');
    expect((await run(at(-86_400_000 + 3_600_000))).summary).toMatch(/^expires in -1 days/);
    expect(certificateExpiry.mandatory).toBe(false);
  });
});

describe('runner, accept rule and table', () => {
  const check = (id: string, run: Check['run'], extra: Partial<Check> = {}): Check => ({ id, spec: 'extra', title: `title ${id}`, mandatory: true, run, ...extra });

  it('runs in order, times each, reports each as it finishes; a throw or a time-out is an error, not a crash', async () => {
    const order: string[] = [];
    const seen: CheckResult[] = [];
    const results = await runChecks(
      [
        check('a', async () => (order.push('a'), { status: 'pass', summary: 'ok', detail: 'd' })),
        check('b', async () => { order.push('b'); throw new Error('boom'); }),
        check('c', () => new Promise(() => order.push('c')), { timeoutMs: 50 }),
        check('d', async () => { throw 'plain'; }),
      ],
      ctx(),
      (r) => seen.push(r),
    );
    expect(order).toEqual(['a', 'b', 'c']);
    expect(seen).toEqual(results);
    expect(results.map((r) => [r.id, r.status, r.summary])).toEqual([
      ['a', 'pass', 'ok'], ['b', 'error', 'boom'], ['c', 'error', 'timed out after 50 ms'], ['d', 'error', 'plain'],
    ]);
    expect(results[0]).toMatchObject({ spec: 'extra', title: 'title a', mandatory: true, detail: 'd' });
    expect(results.slice(1).map((r) => r.detail)).toEqual(['', '', '']);
    expect(results[2]!.durationMs).toBeGreaterThanOrEqual(45);
    expect(results[0]!.durationMs).toBeLessThan(results[2]!.durationMs);
  });

  it("times each check by the clock: no duration exceeds the run's own", async () => {
    const before = performance.now();
    const results = await runChecks([check('a', async () => { await new Promise((res) => setTimeout(res, 30)); return { status: 'pass', summary: '', detail: '' }; })], ctx());
    const elapsed = performance.now() - before;
    expect(results[0]!.durationMs).toBeGreaterThanOrEqual(25);
    expect(results[0]!.durationMs).toBeLessThanOrEqual(Math.ceil(elapsed));
  });

  it('clears the time-out of a check that finished, so no timer outlives verify', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await runChecks([check('a', async () => ({ status: 'pass', summary: '', detail: '' }), { timeoutMs: 60_000 })], ctx());
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a check finishing before its time-out is not cut, and runs without onResult', async () => {
    const [r] = await runChecks([check('a', async () => { await new Promise((res) => setTimeout(res, 20)); return { status: 'fail', summary: 's', detail: '' }; }, { timeoutMs: 5_000 })], ctx());
    expect(r!.status).toBe('fail');
  });

  it('accepts only when every mandatory check passes; admin-not-exposed alone may skip', () => {
    const r = (id: string, status: CheckResult['status'], mandatory = true): CheckResult => ({ id, spec: 'x', title: id, mandatory, status, summary: '', detail: '', durationMs: 0 });
    expect(allMandatoryPass([r('a', 'pass'), r('b', 'warn', false), r('c', 'fail', false), r('admin-not-exposed', 'skip')])).toBe(true);
    expect(allMandatoryPass([])).toBe(true);
    for (const status of ['fail', 'error', 'warn', 'skip'] as const) expect(allMandatoryPass([r('a', 'pass'), r('b', status)]), status).toBe(false);
    expect(allMandatoryPass([r('admin-not-exposed', 'fail')])).toBe(false);
    expect(allMandatoryPass([r('key-auth-metadata', 'skip')])).toBe(false);
    // one host: no other host publishes the gateway
    expect(allMandatoryPass([r('gateway-nodes', 'skip')])).toBe(true);
    expect(allMandatoryPass([r('gateway-nodes', 'fail')])).toBe(false);
  });

  it('every shipped check is mandatory except the expiry warning and the undeclared-objects list, in issue 5 order, then issue 12\'s and 23\'s', () => {
    expect(CHECKS.map((c) => [c.id, c.spec, c.mandatory])).toEqual([
      ['components-up', '4.5.1', true], ['api-health', '4.5.2', true], ['fhir-metadata', '4.5.2', true], ['gateway-objects', '4.5.3', true],
      ['key-auth-metadata', '4.5.4', true], ['gateway-nodes', '4.5.4', true], ['key-auth-no-key', 'extra', true], ['key-auth-wrong-key', 'extra', true],
      ['basic-auth-required', 'extra', true], ['admin-not-exposed', 'extra', true], ['certificate-chain', 'extra', true],
      ['certificate-expiry', 'extra', false], ['file-permissions', 'extra', true],
      ['gateway-drift', 'extra', true], ['fhir-routes-closed', 'extra', true], ['gateway-undeclared', 'extra', false], ['tls-policy', 'extra', true],
    ]);
    expect(Object.isFrozen(CHECKS)).toBe(true);
  });

  it('renders one row per check and the hints of those that did not pass', () => {
    const base = { spec: '4.5.1', mandatory: true, detail: '', durationMs: 12 };
    const text = renderChecks(
      [
        { ...base, id: 'a', title: 'First', status: 'pass', summary: 'fine', hint: 'never shown' },
        { ...base, id: 'b', title: 'Second', status: 'fail', summary: 'broken', hint: 'fix b' },
        { ...base, id: 'c', title: 'Third', status: 'warn', summary: 'soon' },
        { ...base, id: 'd', title: 'Fourth', status: 'skip', summary: 'n/a', hint: 'skip hint' },
        { ...base, id: 'e', title: 'Fifth', status: 'error', summary: 'crash', hint: 'see log' },
      ],
      colourFor({ isTTY: false } as NodeJS.WriteStream),
    );
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^#\s+status\s+check\s+result\s+time$/);
    expect(lines[1]).toMatch(/^-+(  -+){4}$/);
    expect(lines[2]).toMatch(/^4\.5\.1\s+\[✓\] pass\s+First\s+fine\s+12 ms$/);
    expect(text).toMatch(/\[✗\] fail\s+Second/);
    expect(text).toMatch(/\[!\] warn\s+Third/);
    expect(text).toMatch(/\[-\] skip\s+Fourth/);
    expect(text).toMatch(/\[✗\] error\s+Fifth/);
    expect(lines.slice(-3)).toEqual(['  b: fix b', '  d: skip hint', '  e: see log']);
    expect(text).not.toContain('never shown');
    expect(formatCheckProgress({ status: 'fail', title: 'Second', durationMs: 7 })).toBe('  fail  Second (7 ms)');
  });
});

describe('the HTTP helpers', () => {
  it('name the failure with its code, from the cause when there is one', () => {
    expect(describeFailure(Object.assign(new Error('outer'), { code: 'E1', cause: { code: 'E2', message: 'inner' } }))).toBe('E2: inner');
    expect(describeFailure(Object.assign(new Error('msg'), { code: 'E1' }))).toBe('E1: msg');
    expect(describeFailure(new Error('msg'))).toBe('msg');
    expect(describeFailure('text')).toBe('text');
  });

  it('tell TLS failures from others', () => {
    for (const code of ['CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'ERR_TLS_CERT_ALTNAME_INVALID', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'HOSTNAME_MISMATCH']) {
      expect(isTlsFailure(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
    expect(isTlsFailure(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isTlsFailure(new Error('socket hang up'))).toBe(false);
  });

  it('GET with a 10 s header and body time-out by default, asking for FHIR JSON', async () => {
    const seen = recordingDispatcher();
    try {
      const reply = await httpGet(`${endpoints(config).fhirBase}/metadata`, { dispatcher: seen.agent });
      expect(reply.status).toBe(200);
      await httpGet(`${endpoints(config).fhirBase}/metadata`, { dispatcher: seen.agent, timeoutMs: 1234, headers: { 'x-extra': '1' } });
    } finally {
      await seen.agent.close();
    }
    expect(seen.options.map((o) => [o.headersTimeout, o.bodyTimeout])).toEqual([[10_000, 10_000], [1234, 1234]]);
    expect(seen.options.map((o) => o.method)).toEqual(['GET', 'GET']);
    expect(seen.options[0]!.headers).toMatchObject({ accept: 'application/fhir+json, application/json' });
    expect(seen.options[1]!.headers).toMatchObject({ accept: 'application/fhir+json, application/json', 'x-extra': '1' });
  });

  it('know a CapabilityStatement', () => {
    expect(isCapabilityStatement({ resourceType: 'CapabilityStatement' })).toBe(true);
    for (const v of [null, undefined, 'CapabilityStatement', {}, { resourceType: 'Bundle' }]) expect(isCapabilityStatement(v)).toBe(false);
  });
});
