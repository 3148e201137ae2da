/**
 * The Swarm runtime's stack file, checked without an engine: valid against the
 * compose 3.8 schema `docker stack deploy` of docker.io 20.10 validates with,
 * no key that command drops or refuses, every service dnsrr, published ports in
 * host mode, no secret in any environment, the overlay encrypted unless turned
 * off, the DNS and connection settings a moving replica needs, and Kong's and
 * HAPI's environments the same as the docker runtime's but for swarm-only keys.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import AjvDraft04Module from 'ajv-draft-04';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { renderStack, STACK_YAML, stackFile, updateOrder, type StackInputs } from '../../../src/runtime/swarm/render.js';
import { pgpass, SECRET_KEYS, secretName, secretPayloads, type SecretPayloads } from '../../../src/runtime/swarm/secrets.js';
import { swarmSettings } from '../../../src/runtime/swarm/settings.js';
import { swarmProfile } from '../../../src/runtime/swarm/profile.js';
import { projectName } from '../../../src/runtime/container/project.js';
import { renderCompose } from '../../../src/runtime/docker/render.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import type { InstallConfig } from '../../../src/install-dir/install-config.js';
import type { RuntimeFlags } from '../../../src/runtime/profile.js';
import { installConfig } from '../../helpers/install-config.js';
import { withDatabaseCa } from '../../helpers/database-ca.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

// ajv-draft-04 is CommonJS: under NodeNext its class is the `default` export of the default import.
const AjvDraft04 = (AjvDraft04Module as unknown as { default?: typeof AjvDraft04Module.default }).default ?? AjvDraft04Module.default;
// docker/cli v20.10.24 cli/compose/schema/data/config_schema_v3.8.json, see test/fixtures/schemas/README.md
const validateStack = new AjvDraft04({ allErrors: true, strict: false, validateFormats: false }).compile(
  JSON.parse(readFileSync(new URL('../../fixtures/schemas/docker-cli-v20.10.24-compose-v3.8.json', import.meta.url), 'utf8')),
);

/**
 * What `docker stack deploy` 20.10 drops with a warning or refuses (docker/cli v20.10.24
 * cli/compose/types/types.go: UnsupportedProperties, DeprecatedProperties, ForbiddenProperties),
 * and `tmpfs`, which cli/compose/convert/service.go never converts.
 */
const NOT_DEPLOYED = [
  'build', 'cgroupns_mode', 'cgroup_parent', 'devices', 'domainname', 'external_links', 'ipc', 'links', 'mac_address', 'network_mode', 'pid',
  'privileged', 'restart', 'security_opt', 'shm_size', 'userns_mode', 'container_name', 'expose', 'extends', 'volume_driver', 'volumes_from',
  'cpu_quota', 'cpu_shares', 'cpuset', 'mem_limit', 'memswap_limit', 'tmpfs', 'depends_on', 'pull_policy',
];

interface SecretRef { source: string; target: string; uid: string; gid: string; mode: number }
interface Service {
  image: string;
  user?: string;
  environment?: Record<string, string>;
  secrets?: SecretRef[];
  ports?: Array<{ target: number; published: number; protocol: string; mode: string }>;
  healthcheck?: { test: string[] };
  deploy: {
    replicas: number;
    endpoint_mode: string;
    placement?: { constraints?: string[]; max_replicas_per_node?: number; preferences?: Array<{ spread: string }> };
    update_config?: { order: string };
    restart_policy?: Record<string, string>;
  };
  command?: string[];
  [key: string]: unknown;
}
interface Stack {
  version: string;
  networks: Record<string, { driver: string; driver_opts?: Record<string, string>; attachable?: boolean }>;
  secrets: Record<string, { name: string; file: string }>;
  services: Record<string, Service>;
}

/** Each secret's content, recognisable anywhere it might leak. */
const payloads = Object.fromEntries(SECRET_KEYS.map((k) => [k, `SECRET-CONTENT-${k}-7f3a9c`])) as unknown as SecretPayloads;
const dir = tempDir('hapi-swarm-render-');

function swarmConfig(flags: RuntimeFlags = {}, overrides: Partial<InstallConfig> = {}): InstallConfig {
  return installConfig({ runtime: 'swarm', ports: { api: 19000, fhir: 18080, gatewayHttps: 18443 }, swarm: swarmSettings(undefined, withDatabaseCa(flags)), ...overrides });
}

function render(config: InstallConfig = swarmConfig(), inputs: Partial<StackInputs> = {}): { text: string; stack: Stack } {
  const text = renderStack(dir, config, { payloads, eligibleNodes: 3, ...inputs });
  // the docker CLI reads it with a YAML 1.1 parser (gopkg.in/yaml.v2), merge keys included
  return { text, stack: parse(text, STACK_YAML) as Stack };
}

const variants: Array<[string, InstallConfig]> = [
  ['the defaults', swarmConfig()],
  ['both databases outside the swarm, overlay encryption off', swarmConfig({ kongDatabaseUrl: 'postgres://kong@db.hospital.example:6432/kong_gw', fhirDatabaseUrl: 'postgres://hapi@[2001:db8::5]/fhir', overlayEncryption: 'off' })],
  ['nine replicas and labelled nodes', swarmConfig({ gatewayReplicas: '9', apiReplicas: '9', fhirReplicas: '6', kongDatabaseNode: 'n1', fhirDatabaseNode: 'n2' })],
];

describe('the rendered stack file', () => {
  it.each(variants)('is valid for docker stack deploy 20.10 (compose 3.8 schema): %s', (_name, config) => {
    const { stack } = render(config);
    expect(stack.version).toBe('3.8');
    expect(validateStack(stack), JSON.stringify(validateStack.errors)).toBe(true);
  });

  it.each(variants)('uses no key docker stack deploy 20.10 drops or refuses, and nothing it would interpolate: %s', (_name, config) => {
    const { text, stack } = render(config);
    // docker/cli cli/compose/interpolation: `$` starts a variable
    expect(text).not.toContain('$');
    for (const [name, service] of Object.entries(stack.services)) {
      expect(Object.keys(service).filter((k) => NOT_DEPLOYED.includes(k)), name).toEqual([]);
    }
  });

  it('resolves every service by DNS round robin, and publishes ports on the node only (host mode)', () => {
    const { stack } = render();
    expect(Object.keys(stack.services).sort()).toEqual(['fhir-door', 'hapi', 'hapi-database', 'hospital-api', 'kong', 'kong-admin', 'kong-database', 'kong-migrations', 'ops']);
    for (const [name, s] of Object.entries(stack.services)) {
      expect(s.deploy.endpoint_mode, name).toBe('dnsrr');
      for (const p of s.ports ?? []) expect(p.mode, name).toBe('host');
    }
    const published = Object.fromEntries(Object.entries(stack.services).filter(([, s]) => s.ports).map(([n, s]) => [n, s.ports!.map((p) => `${p.published}:${p.target}`)]));
    // the admin API (8001) is never published: only the gateway's HTTPS, the API and the FHIR door
    expect(published).toEqual({ kong: ['18443:8443'], 'fhir-door': ['18080:8080'], 'hospital-api': ['19000:9000'] });
  });

  it('puts no secret in any environment or anywhere in the file, only names that carry a digest of the content', () => {
    const { text, stack } = render();
    for (const content of Object.values(payloads)) expect(text).not.toContain(content);
    for (const [name, s] of Object.entries(stack.services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        expect(Object.values(payloads).some((p) => String(value).includes(p)), `${name} ${key}`).toBe(false);
        // a password or key reaches a service as a file only
        if (/PASSWORD|_KEY$|TOKEN/.test(key)) expect(value, `${name} ${key}`).toMatch(/^\/run\/secrets\/[\w.-]+$/);
      }
    }
    const stackName = projectName(dir);
    for (const key of SECRET_KEYS) {
      const digest = createHash('sha256').update(payloads[key]).digest('hex').slice(0, 8);
      expect(stack.secrets[key]).toEqual({ name: `${stackName}_${key}-${digest}`, file: `./secrets/${key}` });
      // Swarm's limit for a name
      expect(stack.secrets[key]!.name.length).toBeLessThanOrEqual(64);
    }
    expect(secretName(stackName, 'pgpass', 'a')).not.toBe(secretName(stackName, 'pgpass', 'b'));
  });

  it("gives the ops task a password file for both databases, where they are, with libpq's escapes", () => {
    expect(pgpass(swarmConfig(), { kong: 'k:1', hapi: 'h\\2' })).toBe('kong-database:5432:kong:kong:k\\:1\nhapi-database:5432:hapi:hapi:h\\\\2\n');
    const outside = swarmConfig({ kongDatabaseUrl: 'postgres://gw@db.hospital.example:6432/gateway' });
    expect(pgpass(outside, { kong: 'a', hapi: 'b' }).split('\n')[0]).toBe('db.hospital.example:6432:gateway:gw:a');
  });

  it("mounts each secret for its reader only: 0400 and the reader's uid, Kong's readable in its own task", () => {
    const { stack } = render();
    const refs = Object.entries(stack.services).flatMap(([name, s]) => (s.secrets ?? []).map((r) => ({ name, ...r })));
    for (const r of refs) {
      expect(Object.keys(stack.secrets), r.source).toContain(r.source);
      expect(r.mode, `${r.name} ${r.target}`).toBe(r.name.startsWith('kong') && r.name !== 'kong-database' ? 0o444 : 0o400);
    }
    const by = (service: string, target: string) => refs.find((r) => r.name === service && r.target === target);
    expect(by('hapi', 'spring.datasource.password')).toMatchObject({ uid: '65532', gid: '65532' });
    expect(by('ops', 'pgpass')).toMatchObject({ uid: '999', gid: '999' });
    expect(by('kong-database', 'postgres-password')).toMatchObject({ source: 'kong-pg-password', uid: '0' });
    expect(by('hapi-database', 'postgres-password')).toMatchObject({ source: 'hapi-pg-password', uid: '0' });
    const api = stack.services['hospital-api']!;
    expect(by('hospital-api', 'hospital-api.env')).toMatchObject({ uid: api.user!.split(':')[0], gid: api.user!.split(':')[1] });
    // the audit log's seal signer (issue 46): for the API tasks alone
    for (const target of ['audit-seal.pem', 'audit-seal.key']) {
      expect(by('hospital-api', target)).toMatchObject({ source: target, uid: api.user!.split(':')[0], mode: 0o400 });
      expect(refs.filter((r) => r.source === target).map((r) => r.name)).toEqual(['hospital-api']);
    }
    expect(api.command).toEqual(['serve', '--host', '0.0.0.0', '--port', '9000', '--env-file', '/run/secrets/hospital-api.env']);
  });

  it("gives the API tasks the install's audit-seal pair as their two seal secrets (issue 46), never the record signer's key; a placeholder without the pair", () => {
    const own = tempDir('hapi-swarm-seal-');
    const p = installPaths(own);
    mkdirSync(p.tls, { recursive: true });
    writeFileSync(p.signerCert, 'SIGNER CERT\n');
    writeFileSync(p.signerKey, 'SIGNER KEY\n', { mode: 0o600 });
    const unsealed = secretPayloads(own, swarmConfig());
    expect(unsealed['audit-seal.key']).toMatch(/^# no audit-seal key configured/);
    expect(swarmProfile.apiEnv(p, swarmConfig())).not.toHaveProperty('AUDIT_SEAL_KEY_FILE');
    writeFileSync(p.auditSealCert, 'SEAL CERT\n');
    writeFileSync(p.auditSealKey, 'SEAL KEY\n', { mode: 0o600 });
    const sealed = secretPayloads(own, swarmConfig());
    expect([sealed['audit-seal.pem'], sealed['audit-seal.key']]).toEqual(['SEAL CERT\n', 'SEAL KEY\n']);
    expect(Object.entries(sealed).filter(([, v]) => v.includes('SIGNER KEY')).map(([k]) => k)).toEqual([]);
    expect(swarmProfile.apiEnv(p, swarmConfig())).toMatchObject({ AUDIT_SEAL_CERT_FILE: '/run/secrets/audit-seal.pem', AUDIT_SEAL_KEY_FILE: '/run/secrets/audit-seal.key' });
  });

  it("runs Kong's migrations only when the runtime asks, each run a new task, through the image's entrypoint", () => {
    const idle = render().stack.services['kong-migrations']!;
    expect(idle.deploy.replicas).toBe(0);
    expect(idle.deploy.restart_policy).toEqual({ condition: 'on-failure', delay: '3s' });
    const run = render(swarmConfig(), { scale: { 'kong-migrations': 1 }, migrationsRun: 'run-1' }).stack.services['kong-migrations']!;
    expect(run.deploy.replicas).toBe(1);
    expect(run.environment?.HOSPITAL_API_RUN).toBe('run-1');
    // the same database settings and password file as the proxies
    const { HOSPITAL_API_RUN: _run, ...env } = run.environment!;
    const kongEnv = render().stack.services['kong-admin']!.environment!;
    for (const [k, v] of Object.entries(env)) expect(kongEnv[k], k).toBe(v);
    expect(run.command).toEqual(['sh', '-c', ['bootstrap', 'up', 'finish'].map((step) => `/docker-entrypoint.sh kong migrations ${step}`).join(' && ')]);
  });

  it('encrypts the overlay network unless turned off', () => {
    expect(render().stack.networks.backend).toEqual({ driver: 'overlay', attachable: false, driver_opts: { encrypted: '' } });
    expect(render(swarmConfig({ overlayEncryption: 'off' })).stack.networks.backend).toEqual({ driver: 'overlay', attachable: false });
    for (const s of Object.values(render().stack.services)) expect(s.networks).toEqual(['backend']);
  });

  it("keeps Kong's DNS cache short and its SRV lookups off, on the proxies and on kong-admin", () => {
    const { stack } = render();
    for (const name of ['kong', 'kong-admin']) {
      expect(stack.services[name]!.environment, name).toMatchObject({
        KONG_DNS_ORDER: 'LAST,A,CNAME',
        KONG_DNS_VALID_TTL: '5',
        KONG_DNS_STALE_TTL: '5',
        KONG_DNS_NOT_FOUND_TTL: '1',
        KONG_DNS_ERROR_TTL: '1',
        KONG_DB_UPDATE_FREQUENCY: '2',
      });
    }
    expect(stack.services['kong-admin']!.environment).toMatchObject({ KONG_PROXY_LISTEN: 'off', KONG_ADMIN_LISTEN: '127.0.0.1:8001', KONG_STATUS_LISTEN: 'off' });
  });

  it("gives HAPI the JVM's DNS cache, pgjdbc time-outs and Hikari settings a moving database needs, and a liveness-only health", () => {
    const hapi = render().stack.services.hapi!;
    expect(hapi.environment).toMatchObject({
      SPRING_DATASOURCE_URL: 'jdbc:postgresql://hapi-database:5432/hapi?connectTimeout=5&socketTimeout=300&tcpKeepAlive=true',
      JAVA_TOOL_OPTIONS: '-Dsun.net.inetaddr.ttl=5 -Dsun.net.inetaddr.negative.ttl=1',
      SPRING_DATASOURCE_HIKARI_KEEPALIVETIME: '30000',
      SPRING_DATASOURCE_HIKARI_MAXLIFETIME: '600000',
      SPRING_DATASOURCE_HIKARI_CONNECTIONTIMEOUT: '10000',
      SPRING_DATASOURCE_HIKARI_VALIDATIONTIMEOUT: '3000',
      MANAGEMENT_HEALTH_DB_ENABLED: 'false',
    });
    expect(hapi.healthcheck!.test).toEqual(['CMD', 'java', '-cp', '/app', 'HealthCheck']);
  });

  it('leaves the Swarm template {{.Task.Slot}} for the engine to fill', () => {
    const { text, stack } = render();
    expect(stack.services.hapi!.environment!.STANDIN_SLOT).toBe('{{.Task.Slot}}');
    // and no placeholder of the renderer's own is left
    expect(text.replace(/^\s*#.*$/gm, '').match(/\{\{\w+\}\}/g)).toBeNull();
  });

  it("has Kong's and HAPI's environment of the docker runtime's compose file, apart from swarm-only keys and /run/secrets paths", () => {
    const compose = parse(renderCompose(dir, installConfig()), { merge: true }) as { services: Record<string, { environment: Record<string, string> }> };
    const { stack } = render();
    const parity = (service: string, swarmOnly: string[], paths: string[], extended: string[]) => {
      const docker = compose.services[service]!.environment;
      const swarm = stack.services[service]!.environment!;
      expect(Object.keys(swarm).filter((k) => !(k in docker)).sort(), `${service}: keys only the stack has`).toEqual([...swarmOnly].sort());
      expect(Object.keys(docker).filter((k) => !(k in swarm)), `${service}: keys only compose has`).toEqual([]);
      for (const [key, value] of Object.entries(docker)) {
        if (paths.includes(key)) {
          expect(swarm[key], `${service} ${key}`).toMatch(/^(optional:configtree:)?\/run\/secrets\//);
          expect(swarm[key]!.split('/').pop(), `${service} ${key}`).toBe(String(value).split('/').pop());
        } else if (extended.includes(key)) {
          expect(swarm[key], `${service} ${key}`).toBe(`${value}?connectTimeout=5&socketTimeout=300&tcpKeepAlive=true`);
        } else {
          expect(swarm[key], `${service} ${key}`).toBe(value);
        }
      }
    };
    parity(
      'kong',
      ['KONG_PG_PORT', 'KONG_DNS_ORDER', 'KONG_DNS_VALID_TTL', 'KONG_DNS_STALE_TTL', 'KONG_DNS_NOT_FOUND_TTL', 'KONG_DNS_ERROR_TTL', 'KONG_DB_UPDATE_FREQUENCY', 'KONG_PG_SSL', 'KONG_PG_SSL_REQUIRED', 'KONG_PG_SSL_VERIFY', 'KONG_LUA_SSL_TRUSTED_CERTIFICATE'],
      ['KONG_PG_PASSWORD_FILE', 'KONG_SSL_CERT', 'KONG_SSL_CERT_KEY'],
      [],
    );
    parity(
      'hapi',
      ['JAVA_TOOL_OPTIONS', 'SPRING_DATASOURCE_HIKARI_KEEPALIVETIME', 'SPRING_DATASOURCE_HIKARI_MAXLIFETIME', 'SPRING_DATASOURCE_HIKARI_CONNECTIONTIMEOUT', 'SPRING_DATASOURCE_HIKARI_VALIDATIONTIMEOUT', 'MANAGEMENT_HEALTH_DB_ENABLED', 'STANDIN_SLOT'],
      ['SPRING_CONFIG_IMPORT'],
      ['SPRING_DATASOURCE_URL'],
    );
  });

  it('places the databases, kong-admin, ops and the FHIR door on labelled nodes, and one gateway and one API per node', () => {
    const s = render().stack.services;
    expect(s['kong-database']!.deploy.placement!.constraints).toEqual(['node.labels.hospital-api.kong-database == true']);
    expect(s['hapi-database']!.deploy.placement!.constraints).toEqual(['node.labels.hospital-api.fhir-database == true']);
    for (const name of ['kong-admin', 'ops', 'fhir-door']) expect(s[name]!.deploy, name).toMatchObject({ replicas: 1, placement: { constraints: ['node.labels.hospital-api.admin == true'] } });
    for (const name of ['kong', 'hospital-api']) expect(s[name]!.deploy.placement!.max_replicas_per_node, name).toBe(1);
    expect(s.hapi!.deploy.placement!.preferences).toEqual([{ spread: 'node.id' }]);
    expect([s.kong!.deploy.replicas, s.hapi!.deploy.replicas, s['hospital-api']!.deploy.replicas]).toEqual([2, 2, 2]);
    const scaled = render(swarmConfig({ gatewayReplicas: '3', fhirReplicas: '1', apiReplicas: '5' })).stack.services;
    expect([scaled.kong!.deploy.replicas, scaled.hapi!.deploy.replicas, scaled['hospital-api']!.deploy.replicas]).toEqual([3, 1, 5]);
    // the runtime's start phases deploy some services with other counts
    const phase = render(swarmConfig(), { scale: { kong: 0, 'hospital-api': 0, hapi: 1 } }).stack.services;
    expect([phase.kong!.deploy.replicas, phase.hapi!.deploy.replicas, phase['hospital-api']!.deploy.replicas]).toEqual([0, 1, 0]);
  });

  it('updates the gateway and the API start-first only while a node is spare for the new task', () => {
    expect([updateOrder(2, 3), updateOrder(3, 3), updateOrder(4, 3), updateOrder(1, null)]).toEqual(['start-first', 'stop-first', 'stop-first', 'stop-first']);
    const orders = (config: InstallConfig, eligibleNodes: number | null) => {
      const s = render(config, { eligibleNodes }).stack.services;
      return [s.kong!.deploy.update_config!.order, s['hospital-api']!.deploy.update_config!.order];
    };
    expect(orders(swarmConfig(), 3)).toEqual(['start-first', 'start-first']);
    expect(orders(swarmConfig({ gatewayReplicas: '3' }), 3)).toEqual(['stop-first', 'start-first']);
    expect(orders(swarmConfig(), null)).toEqual(['stop-first', 'stop-first']);
    expect(render().stack.services.hapi!.deploy.update_config!.order).toBe('start-first');
  });

  it('leaves out a database the hospital runs outside the swarm, and points Kong and HAPI at it', () => {
    const { stack } = render(swarmConfig({ kongDatabaseUrl: 'postgres://kong_gw@db.hospital.example:6432/gateway', fhirDatabaseUrl: 'postgres://fhir@[2001:db8::5]/hapi_r4' }));
    expect(stack.services['kong-database']).toBeUndefined();
    expect(stack.services['hapi-database']).toBeUndefined();
    // off the stack's network: TLS required and verified against the hospital's CA, in every task that reaches it
    const tls = { KONG_PG_SSL: 'on', KONG_PG_SSL_REQUIRED: 'on', KONG_PG_SSL_VERIFY: 'on', KONG_LUA_SSL_TRUSTED_CERTIFICATE: '/run/secrets/database-ca.pem' };
    for (const kong of ['kong', 'kong-admin', 'kong-migrations']) {
      expect(stack.services[kong]!.environment, kong).toMatchObject({ KONG_PG_HOST: 'db.hospital.example', KONG_PG_PORT: '6432', KONG_PG_USER: 'kong_gw', KONG_PG_DATABASE: 'gateway', ...tls });
    }
    expect(stack.services.hapi!.environment).toMatchObject({
      SPRING_DATASOURCE_URL: 'jdbc:postgresql://[2001:db8::5]:5432/hapi_r4?connectTimeout=5&socketTimeout=300&tcpKeepAlive=true&sslmode=verify-full&sslrootcert=/run/secrets/database-ca.pem',
      SPRING_DATASOURCE_USERNAME: 'fhir',
    });
    for (const reader of ['kong', 'kong-admin', 'kong-migrations', 'hapi', 'ops']) {
      expect(stack.services[reader]!.secrets!.map((r) => r.source), reader).toContain('database-ca.pem');
    }
    // the secret holds the CA install read; with the stack's own databases, a placeholder (Swarm refuses an empty secret)
    const outside = swarmConfig({ fhirDatabaseUrl: 'postgres://fhir@db/hapi' });
    expect(secretPayloads(dir, outside)['database-ca.pem']).toBe(outside.swarm!.databaseCa);
    expect(outside.swarm!.databaseCa).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(secretPayloads(dir, swarmConfig())['database-ca.pem']).toMatch(/^# no database outside the swarm/);
    const one = render(swarmConfig({ fhirDatabaseUrl: 'postgres://fhir@db/hapi' })).stack.services;
    expect([one['kong-database'] !== undefined, one['hapi-database'] === undefined]).toEqual([true, true]);
    // the stack's own Kong database stays on the overlay: no TLS asked of it, Kong's own trust store
    expect(one.kong!.environment).toMatchObject({ KONG_PG_SSL: 'off', KONG_PG_SSL_VERIFY: 'off', KONG_LUA_SSL_TRUSTED_CERTIFICATE: 'system' });
  });

  it("is the profile's rendered file, <dir>/swarm/stack.yaml, its secrets named from the install directory's files", async () => {
    const inst = tempDir('hapi-swarm-files-');
    const p = installPaths(inst);
    mkdirSync(p.secrets, { recursive: true });
    writeFileSync(join(p.secrets, 'kong-pg-password'), 'kong-db-password-1\n', { mode: 0o600 });
    const config = swarmConfig();
    const [file, ...more] = await swarmProfile.renderFiles(inst, config);
    expect(more).toEqual([]);
    expect(file!.path).toBe(stackFile(inst));
    expect(file!.path).toBe(join(p.root, 'swarm', 'stack.yaml'));
    const stack = parse(file!.text, STACK_YAML) as Stack;
    const digest = createHash('sha256').update('kong-db-password-1\n').digest('hex').slice(0, 8);
    expect(stack.secrets['kong-pg-password']!.name).toBe(`${projectName(inst)}_kong-pg-password-${digest}`);
    expect(file!.text).not.toContain('kong-db-password-1');
  });
});
