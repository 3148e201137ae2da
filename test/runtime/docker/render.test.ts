/**
 * The rendered compose project, checked without an engine: valid against the
 * Compose Specification schema, ports published on the addresses install chose,
 * Kong's admin API inside the container only, no password in the file or in an
 * environment, pinned current images, the HAPI 8 dialect set the way HAPI 8
 * reads it, and the operational settings issue 10 lists. What these settings do
 * on a real engine is proven by test/docker-engine/.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { apiUser, dockerSettings, PIDNS_HOLDER_USER, publish, publishedPorts, renderCompose } from '../../../src/runtime/docker/render.js';
import { HAPI_IMAGE_USER, IMAGES } from '../../../src/runtime/container/images.js';
import { HUNG_PROBE } from '../../../src/runtime/container/hung-check.js';
import { renderTemplate } from '../../../src/runtime/container/template.js';
import type { InstallConfig } from '../../../src/install-dir/install-config.js';
import { installConfig } from '../../helpers/install-config.js';
import { acceptanceServices } from '../../../src/runtime/docker/acceptance.js';

// compose-spec/compose-spec schema/compose-spec.json (Apache-2.0), see test/fixtures/schemas/README.md
const schema = JSON.parse(readFileSync(new URL('../../fixtures/schemas/compose-spec.json', import.meta.url), 'utf8'));
const base = installConfig({ ports: { api: 19000, fhir: 18080, gatewayHttps: 18443 } });

type Service = {
  image?: string;
  ports?: string[];
  environment?: Record<string, string>;
  env_file?: string[];
  build?: unknown;
  pull_policy?: string;
  user?: string;
  command?: string[];
  volumes?: string[];
  logging?: { driver: string; options?: Record<string, string> };
  healthcheck?: { test: string[]; start_period?: string; interval?: string; timeout?: string; retries?: number };
  init?: boolean;
  pid?: string;
  entrypoint?: string[];
  read_only?: boolean;
  cap_drop?: string[];
  cap_add?: string[];
  security_opt?: string[];
  network_mode?: string;
  privileged?: boolean;
  depends_on?: unknown;
};
const render = (config: InstallConfig = base, dir = '/srv/hospital api: one') =>
  parse(renderCompose(dir, config), { merge: true }) as { services: Record<string, Service> };

describe('templates/compose.yaml rendered', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv({ validateSchema: false, strict: false, allErrors: true });
    const validate = ajv.compile(schema);
    const doc = render();
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    // and the schema does reject a broken file (the validation is real)
    expect(validate({ ...doc, services: { kong: { ports: 'not-a-list', image: 1 } } })).toBe(false);
  });

  it('publishes the gateway HTTPS and API ports on the bind address, FHIR on loopback only, admin never', () => {
    const published = (c: InstallConfig) => Object.entries(render(c).services).flatMap(([name, s]) => (s.ports ?? []).map((p) => `${name} ${p}`)).sort();
    // a host on the network: every address for the gateway and API; FHIR stays on 127.0.0.1
    expect(published({ ...base, docker: dockerSettings(base.hosts, undefined) })).toEqual(['fhir-door 127.0.0.1:18080:8080', 'hospital-api 0.0.0.0:19000:9000', 'kong 0.0.0.0:18443:8443']);
    // a loopback-only install publishes on 127.0.0.1 only
    const local = { ...base, hosts: ['localhost'] };
    expect(published(local)).toEqual(['fhir-door 127.0.0.1:18080:8080', 'hospital-api 127.0.0.1:19000:9000', 'kong 127.0.0.1:18443:8443']);
    // explicit flags, kept by a rerun without them
    const chosen = dockerSettings(base.hosts, undefined, { bindAddress: '10.1.2.3', fhirBindAddress: '10.1.2.3' });
    expect(dockerSettings(base.hosts, chosen)).toEqual(chosen);
    expect(published({ ...base, docker: chosen })).toEqual(['fhir-door 10.1.2.3:18080:8080', 'hospital-api 10.1.2.3:19000:9000', 'kong 10.1.2.3:18443:8443']);
    expect(publish('::1', 9000, 9000)).toBe('[::1]:9000:9000');
  });

  it('publishes the FHIR door, never HAPI: the door runs the API image as its uid, forwards to hapi:8080 only, reads its token from a file', () => {
    const s = render({ ...base, docker: dockerSettings(base.hosts, undefined, { fhirBindAddress: '10.9.8.7' }) }).services;
    expect(s.hapi!.ports).toBeUndefined();
    const door = s['fhir-door']!;
    expect(door.ports).toEqual(['10.9.8.7:18080:8080']);
    expect(door.image).toBe(s['hospital-api']!.image);
    expect(door.user).toBe(s['hospital-api']!.user);
    expect(door.command).toEqual(['fhir', 'door', '--host', '0.0.0.0', '--port', '8080', '--upstream', 'http://hapi:8080', '--token-file', '/run/hospital-api-door/token']);
    expect(door.volumes).toEqual(['./fhir-door:/run/hospital-api-door:ro']);
    // the token is a file, never the environment
    expect(door.environment).toBeUndefined();
    expect(door).toMatchObject({ read_only: true, cap_drop: ['ALL'], security_opt: ['no-new-privileges:true'], init: true });
  });

  it("keeps Kong's admin API on loopback inside its container; no reports, no version header, fixed workers", () => {
    const env = render().services.kong!.environment!;
    expect(env.KONG_ADMIN_LISTEN).toBe('127.0.0.1:8001');
    expect(env.KONG_ADMIN_GUI_LISTEN).toBe('off');
    expect(env.KONG_PROXY_LISTEN).toContain('8443 ssl');
    expect(env.KONG_ANONYMOUS_REPORTS).toBe('off');
    expect(env.KONG_HEADERS).toBe('off');
    // Mozilla intermediate, Kong's default, stated (issue 23); no custom cipher list beside it
    expect(env.KONG_SSL_CIPHER_SUITE).toBe('intermediate');
    expect(env.KONG_SSL_CIPHERS).toBeUndefined();
    expect(Number(env.KONG_NGINX_WORKER_PROCESSES)).toBeGreaterThan(0);
  });

  it('holds no password, and puts none in an environment: *_FILE and a Spring configtree', () => {
    const text = renderCompose('/srv/x', base);
    expect(text).not.toMatch(/PASSWORD:\s*\S+\s*$/m);
    const s = render().services;
    for (const [name, svc] of Object.entries(s)) {
      for (const key of Object.keys(svc.environment ?? {})) expect(key, name).not.toMatch(/PASSWORD$|^FHIR_API_KEY$/);
      expect(svc.env_file, name).toBeUndefined();
    }
    expect(s['kong-database']!.environment!.POSTGRES_PASSWORD_FILE).toBe('/run/hospital-api/secrets/kong-pg-password');
    expect(s['hapi-database']!.environment!.POSTGRES_PASSWORD_FILE).toBe('/run/hospital-api/secrets/hapi-pg-password');
    for (const m of ['kong-migrations', 'kong-migrations-up', 'kong-migrations-finish', 'kong']) {
      expect(s[m]!.environment!.KONG_PG_PASSWORD_FILE, m).toBe('/run/hospital-api/secrets/kong-pg-password');
    }
    // the image's entrypoint applies *_FILE only when the command starts with `kong`
    for (const m of ['kong-migrations', 'kong-migrations-up', 'kong-migrations-finish']) expect(s[m]!.command![0], m).toBe('kong');
    expect(s.hapi!.environment!.SPRING_CONFIG_IMPORT).toBe('optional:configtree:/run/hospital-api/hapi-config/');
    // the API reads its settings file itself, so no secret is in its environment
    expect(s['hospital-api']!.command).toContain('/run/hospital-api/hospital-api.env');
    // only where its acceptance gauges read records (issue 46): no secret
    expect(s['hospital-api']!.environment).toEqual({ HOSPITAL_API_DIR: '/srv/hospital api: one' });
    expect(s['hospital-api']!.env_file).toBeUndefined();
  });

  it('pins current images, each overridable; HAPI 8 gets its Postgres dialect under the names it reads', () => {
    const s = render().services;
    expect(IMAGES).toEqual({ kong: 'kong:3.9.3', postgres: 'postgres:16.13', hapi: 'hapiproject/hapi:v8.10.0-3' });
    expect(s.kong!.image).toBe('kong:3.9.3');
    expect(s.hapi!.image).toBe('hapiproject/hapi:v8.10.0-3');
    expect(s['kong-database']!.image).toBe('postgres:16.13');
    const dialect = 'ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect';
    // the raw property name (StarterJpaConfig) and 8.x's application.yaml placeholder;
    // SPRING_JPA_PROPERTIES_HIBERNATE_DIALECT alone is ignored (starter #804)
    expect(s.hapi!.environment!['spring.jpa.properties.hibernate.dialect']).toBe(dialect);
    expect(s.hapi!.environment!.HIBERNATE_DIALECT).toBe(dialect);
    expect(s.hapi!.environment!.HAPI_FHIR_USE_APACHE_ADDRESS_STRATEGY).toBe('true');
    expect(s.hapi!.environment!.SPRING_DATASOURCE_URL).toMatch(/^jdbc:postgresql:\/\/hapi-database:5432\//);
    // built from the Dockerfile, never pulled
    expect(s['hospital-api']!.build).toMatchObject({ dockerfile: 'Dockerfile' });
    expect(s['hospital-api']!.pull_policy).toBe('build');
    const own = render({ ...base, docker: dockerSettings(base.hosts, undefined, { kongImage: 'registry.hospital.example:5000/kong:3.9.3', apiImage: 'registry.hospital.example/hospital-api:0.1.0' }) }).services;
    expect(own.kong!.image).toBe('registry.hospital.example:5000/kong:3.9.3');
    expect(own['hospital-api']!.image).toBe('registry.hospital.example/hospital-api:0.1.0');
    expect(own['hospital-api']!.build).toBeUndefined();
  });

  it('rotates logs, checks Postgres over TCP with a start period, mounts folders, never runs the API as root', () => {
    const s = render().services;
    for (const [name, svc] of Object.entries(s)) expect(svc.logging, name).toEqual({ driver: 'json-file', options: { 'max-size': '10m', 'max-file': '5' } });
    for (const [db, user] of [['kong-database', 'kong'], ['hapi-database', 'hapi']] as const) {
      const [kind, script] = s[db]!.healthcheck!.test as [string, string];
      expect(kind).toBe('CMD-SHELL');
      expect(script).toContain(`timeout -s KILL ${HUNG_PROBE.timeoutS + 1} pg_isready -q -h 127.0.0.1 -U ${user} -d ${user} -t ${HUNG_PROBE.timeoutS}; rc=$$?`); // $ doubled for Compose
      // 20 probes to become healthy on a first start, as before the hung check
      expect(s[db]!.healthcheck).toMatchObject({ retries: 20, start_period: '30s', interval: `${HUNG_PROBE.intervalS}s`, timeout: '10s' });
    }
    expect(s['hospital-api']!.volumes).toEqual([
      './api:/run/hospital-api:ro', './api-logs:/var/log/hospital-api', './api-status:/run/hospital-api-status',
      // the acceptance records, read-only, for its gauges (issue 46)
      '/srv/hospital api: one/reports:/srv/hospital api: one/reports:ro',
    ]);
    expect(s['hospital-api']!.user).not.toMatch(/^0:|^root/);
    expect(apiUser(0, 0)).toEqual({ uid: 1000, gid: 1000 });
    expect(apiUser(1234, 0)).toEqual({ uid: 1234, gid: 1234 });
    expect(apiUser(1234, 1235)).toEqual({ uid: 1234, gid: 1235 });
  });

  it('runs kong, hospital-api, the FHIR door and the databases under docker-init with a healthcheck that replaces them when hung; HAPI has none (distroless: see its watchdog)', () => {
    const s = render().services;
    for (const name of ['kong', 'hospital-api', 'fhir-door']) {
      expect(s[name]!.init, name).toBe(true);
      expect(s[name]!.healthcheck, name).toMatchObject({ interval: `${HUNG_PROBE.intervalS}s`, timeout: '10s', retries: HUNG_PROBE.failures });
    }
    expect(HUNG_PROBE.timeoutS * 1000).toBeLessThan(10_000);
    expect(s['hospital-api']!.healthcheck!.test).toEqual([
      'CMD', 'node', '/app/dist/runtime/docker/hung-probe.js', '--url', 'http://127.0.0.1:9000/api/health-check',
      '--timeout-ms', String(HUNG_PROBE.timeoutS * 1000), '--failures', String(HUNG_PROBE.failures), '--start-grace', String(HUNG_PROBE.startGraceS),
      '--state', '/tmp/hospital-api-health',
    ]);
    // the door is probed on a target it refuses itself (only /fhir is forwarded): a hung HAPI behind it never gets it
    // killed; its root is read-only, so the probe's count lives on a tmpfs
    expect(s['fhir-door']!.healthcheck!.test).toEqual([
      'CMD', 'node', '/app/dist/runtime/docker/hung-probe.js', '--url', 'http://127.0.0.1:8080/',
      '--timeout-ms', String(HUNG_PROBE.timeoutS * 1000), '--failures', String(HUNG_PROBE.failures), '--start-grace', String(HUNG_PROBE.startGraceS),
      '--state', '/tmp/fhir-door-health',
    ]);
    expect(s['fhir-door']!.read_only).toBe(true);
    expect((s['fhir-door'] as { tmpfs?: string[] }).tmpfs).toEqual(['/tmp']);
    // the shell probe: $ doubled for Compose's interpolation, the limits filled in, Kong's admin port
    const [kind, script] = s.kong!.healthcheck!.test as [string, string];
    expect(kind).toBe('CMD-SHELL');
    expect(script).not.toMatch(/(^|[^$])\$[^$]/);
    expect(script).not.toContain('{{');
    expect(script).toContain('HTTP::Tiny->new(timeout => 3)');
    expect(script).toContain('http://127.0.0.1:8001/status');
    expect(script).toContain(`-ge ${HUNG_PROBE.failures} ]`);
    // a kong that never answered yet gets the same start grace as the API
    expect(script).toContain(`$((now - seen)) -ge ${HUNG_PROBE.startGraceS} ]`);
    expect(script).toContain('kill -KILL');
    // the databases: the same script, pg_isready's "rejecting connections" (1) is an answer,
    // and a database that never answered (initdb) is never killed: no start grace at all
    for (const db of ['kong-database', 'hapi-database']) {
      expect(s[db]!.init, db).toBe(true);
      const dbScript = (s[db]!.healthcheck!.test as [string, string])[1];
      expect(dbScript).not.toMatch(/(^|[^$])\$[^$]/);
      expect(dbScript).toContain(`no answer from ${db} (pg_isready) within ${HUNG_PROBE.timeoutS} s`);
      expect(dbScript).toContain('if [ "$$rc" = 1 ]; then');
      expect(dbScript).toContain(`-ge ${HUNG_PROBE.failures} ] && [ "$$ok" = 1 ]; then`);
      expect(dbScript).not.toContain('now - seen');
    }
    expect(s.hapi!.init).toBeUndefined();
    expect(s.hapi!.healthcheck).toBeUndefined();
  });

  it('replaces a hung HAPI from a watchdog in a PID namespace held apart: same uid as HAPI, no capability, no port, no socket', () => {
    const s = render().services;
    // hapi and its watchdog join the holder's PID namespace; the holder only sleeps, as nobody, offline
    expect(s.hapi!.pid).toBe('service:hapi-pidns');
    expect(s['hapi-watchdog']!.pid).toBe('service:hapi-pidns');
    const holder = s['hapi-pidns']!;
    expect(holder).toMatchObject({ image: IMAGES.postgres, entrypoint: ['sleep', 'infinity'], user: PIDNS_HOLDER_USER, init: true, network_mode: 'none', read_only: true, cap_drop: ['ALL'] });
    expect(holder.pid).toBeUndefined();
    // tmpfs where the postgres image declares its VOLUME (up to 17 and from 18), so no container leaves an anonymous volume
    expect((holder.volumes as unknown as Array<{ type: string; target: string }>).map((v) => `${v.type} ${v.target}`)).toEqual(['tmpfs /var/lib/postgresql', 'tmpfs /var/lib/postgresql/data']);
    // the watchdog: the API's image (node + hung-probe.js) in watch mode, as HAPI's image's user
    const w = s['hapi-watchdog']!;
    expect(w.image).toBe(s['hospital-api']!.image);
    expect(w.user).toBe(HAPI_IMAGE_USER);
    expect(PIDNS_HOLDER_USER.split(':')[0]).not.toBe(HAPI_IMAGE_USER.split(':')[0]);
    expect(w.entrypoint).toEqual(['node', '/app/dist/runtime/docker/hung-probe.js']);
    expect(w.command).toEqual([
      '--watch', '--url', 'http://hapi:8080/fhir/metadata', '--interval-s', String(HUNG_PROBE.intervalS), '--timeout-ms', String(HUNG_PROBE.timeoutS * 1000),
      '--failures', String(HUNG_PROBE.failures), '--start-grace', String(HUNG_PROBE.hapiStartGraceS),
    ]);
    for (const [name, svc] of [['hapi-pidns', holder], ['hapi-watchdog', w]] as const) {
      expect(svc.read_only, name).toBe(true);
      expect(svc.cap_drop, name).toEqual(['ALL']);
      expect(svc.cap_add, name).toBeUndefined();
      expect(svc.privileged, name).toBeUndefined();
      expect(svc.security_opt, name).toEqual(['no-new-privileges:true']);
      expect(svc.ports, name).toBeUndefined();
      // nothing of the host (no Docker socket, no folder): at most the holder's tmpfs
      expect((svc.volumes ?? []).filter((v) => (v as unknown as { type?: string }).type !== 'tmpfs'), name).toEqual([]);
      expect(svc.healthcheck, name).toBeUndefined();
    }
    // the watchdog stands apart from HAPI's lifetime: it neither waits for it nor makes it wait
    expect(w.depends_on).toBeUndefined();
    expect(s.hapi!.depends_on).toEqual({ 'hapi-database': { condition: 'service_healthy' } });
  });

  it('a demo install alone has the platform stand-in: the API image, never root, no port, its own read-only token copy', () => {
    expect(render().services.platform).toBeUndefined();
    const demo = render({ ...base, demo: true }).services;
    const platform = demo.platform!;
    expect(platform.image).toBe(demo['hospital-api']!.image);
    expect(platform.user).toBe(demo['hospital-api']!.user);
    expect(platform.user!.split(':')[0]).not.toBe('0');
    expect(platform.ports).toBeUndefined();
    expect(platform.command).toEqual(['demo', '--platform-stand-in', '--listen', '0.0.0.0:8088', '--dir', '/platform']);
    expect(platform.volumes).toEqual(['./platform:/platform:ro']);
    expect(platform.init).toBe(true);
  });

  it('scheduled acceptance (issue 46): only with --verify-every, two services and neither has the engine socket; the relay joins kong\'s network namespace, the run the host\'s', () => {
    expect(Object.keys(render().services)).not.toContain('acceptance');
    expect(Object.keys(render().services)).not.toContain('acceptance-relay');
    const dir = '/srv/hospital $HOME: one';
    const text = renderCompose(dir, { ...base, verifyEvery: 45 });
    const s = (parse(text, { merge: true }) as { services: Record<string, Service> }).services;
    const run = s.acceptance!;
    const relay = s['acceptance-relay']!;
    for (const [name, svc] of [['acceptance', run], ['acceptance-relay', relay]] as const) {
      for (const v of svc.volumes ?? []) expect(v, name).not.toMatch(/docker\.sock|\/var\/run|\/run\/docker/);
      expect(svc.environment?.DOCKER_HOST, name).toBeUndefined();
      expect(svc.privileged, name).toBeUndefined();
      expect(svc.cap_drop, name).toEqual(['ALL']);
      expect(svc.security_opt, name).toEqual(['no-new-privileges:true']);
      expect(svc.read_only, name).toBe(true);
      expect(svc.ports, name).toBeUndefined();
      // the installer's uid, who owns the install directory's files (the record-signing key, 0600)
      expect(svc.user, name).toBe(`${process.getuid!()}:${process.getgid!()}`);
      expect(svc.image, name).toBe(s['hospital-api']!.image);
    }
    // a non-root installer's run needs no capability; a root install's reads the images' users' copies (0700) with DAC_OVERRIDE alone
    expect(relay.cap_add).toBeUndefined();
    expect(run.cap_add).toEqual(process.getuid!() === 0 ? ['DAC_OVERRIDE'] : undefined);
    const asRoot = (parse(acceptanceServices('/srv/x', 30, 'img', { uid: 0, gid: 0 }).replace(/^/, 'x-logging: &logging {}\nservices:'), { merge: true }) as { services: Record<string, Service> }).services;
    expect(asRoot.acceptance!.cap_add).toEqual(['DAC_OVERRIDE']);
    expect(asRoot['acceptance-relay']!.cap_add).toBeUndefined();
    const asUser = (parse(acceptanceServices('/srv/x', 30, 'img', { uid: 1234, gid: 1234 }).replace(/^/, 'x-logging: &logging {}\nservices:'), { merge: true }) as { services: Record<string, Service> }).services;
    expect(asUser.acceptance!.cap_add).toBeUndefined();
    expect(relay.network_mode).toBe('service:kong');
    expect(relay.entrypoint).toEqual(['node', '/app/dist/runtime/docker/acceptance.js']);
    expect(relay.command).toEqual(['--relay', '/run/hospital-api-relay/relay.sock']);
    expect(relay.volumes).toEqual(['./acceptance-relay:/run/hospital-api-relay']);
    expect(run.network_mode).toBe('host');
    expect(run.environment).toEqual({ HOSPITAL_API_ACCEPTANCE_RELAY: '/run/hospital-api-relay/relay.sock', NO_COLOR: '1' });
    // the install directory read-only at its own path, reports/ writable; a $ in it is not interpolated by Compose
    expect(run.volumes).toEqual([`${dir}:${dir}:ro`.replaceAll('$', '$$$$'), `${dir}/reports:${dir}/reports`.replaceAll('$', '$$$$'), './acceptance-relay:/run/hospital-api-relay']);
    // verify --scheduled, then the interval, again: runs never overlap; the directory and the interval are arguments, never shell text
    expect(run.entrypoint).toEqual(['sh', '-c', 'while :; do node /app/bin/hospital-api.js verify --scheduled --dir "$$0"; sleep "$$1"; done', dir.replaceAll('$', '$$$$'), '45']);
    const ajv = new Ajv({ validateSchema: false, strict: false, allErrors: true });
    const validate = ajv.compile(schema);
    expect(validate(parse(text, { merge: true })), JSON.stringify(validate.errors)).toBe(true);
  });

  it('quotes values, so an image name cannot inject YAML', () => {
    expect(renderTemplate('x: {{v}}\n', { v: 'a: b\ny: z' })).toBe('x: "a: b\\ny: z"\n');
    expect(() => renderTemplate('{{missing}}', {})).toThrow(/missing/);
  });
});

describe('publishedPorts: what up checks before it starts anything (issue 48)', () => {
  const render = (config: InstallConfig) => (parse(renderCompose('/srv/h', config), { merge: true }) as { services: Record<string, Service> }).services;
  const fromCompose = (config: InstallConfig) =>
    Object.entries(render(config))
      .flatMap(([name, svc]) => (svc.ports ?? []).map((p) => `${name} ${p.split(':').slice(0, -1).join(':')}`))
      .sort();
  const fromList = (config: InstallConfig) => publishedPorts(config).map((p) => `${p.service} ${p.host}:${p.port}`).sort();

  it('names every port the compose file publishes, with its service and address, and nothing else', () => {
    const lan = { ...base, docker: dockerSettings(base.hosts, undefined, { bindAddress: '198.51.100.1' }) };
    const everywhere = { ...base, docker: dockerSettings(base.hosts, undefined) };
    for (const config of [everywhere, lan, { ...lan, monitoring: true, ports: { ...lan.ports, metrics: 19464, gatewayStatus: 18007 } }]) {
      expect(fromList(config)).toEqual(fromCompose(config));
    }
    expect(publishedPorts({ ...lan, monitoring: true }).map((p) => p.flag)).toEqual(['--gateway-https-port', '--api-port', '--fhir-port', '--gateway-status-port', '--metrics-port']);
  });
});
