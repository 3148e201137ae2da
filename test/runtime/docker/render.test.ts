/**
 * The rendered compose project, checked without an engine: valid against the
 * Compose Specification schema, only the three §1 ports published, Kong's
 * admin API inside the container only, no password in the file, pinned images.
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { IMAGES, renderCompose, renderTemplate } from '../../../src/runtime/docker/render.js';
import { DEFAULT_PORTS, type InstallConfig } from '../../../src/runtime/install-config.js';

const schema = JSON.parse(readFileSync(new URL('../../fixtures/schemas/compose-spec.json', import.meta.url), 'utf8'));
const config: InstallConfig = {
  formatVersion: 1,
  runtime: 'docker',
  hosts: ['fhir.hospital.example'],
  ports: { ...DEFAULT_PORTS, api: 19000, fhir: 18080, gatewayHttps: 18443 },
  platformApiUrl: null,
  caGenerated: true,
  cors: { origins: ['*'], headers: null, exposedHeaders: null },
  toolkitVersion: '0.1.0',
  installedAt: '2026-11-21T00:00:00.000Z',
  demo: false,
};

type Service = { image?: string; ports?: string[]; environment?: Record<string, string>; env_file?: string[]; build?: unknown };
const compose = (dir = '/srv/hospital api: one') => parse(renderCompose(dir, config)) as { name: string; services: Record<string, Service> };

describe('templates/compose.yaml rendered', () => {
  it('is valid against the Compose Specification schema', () => {
    const ajv = new Ajv({ validateSchema: false, strict: false, allErrors: true });
    const validate = ajv.compile(schema);
    const doc = compose();
    expect(validate(doc), JSON.stringify(validate.errors)).toBe(true);
    // and the schema does reject a broken file (the validation is real)
    expect(validate({ ...doc, services: { kong: { ports: 'not-a-list', image: 1 } } })).toBe(false);
  });

  it('publishes only the gateway HTTPS, Hospital API and FHIR ports (spec §1)', () => {
    const published = Object.entries(compose().services).flatMap(([name, s]) => (s.ports ?? []).map((p) => `${name} ${p}`));
    expect(published.sort()).toEqual(['hapi 18080:8080', 'hospital-api 19000:9000', 'kong 18443:8443']);
  });

  it("keeps Kong's admin API on loopback inside its container, GUI off", () => {
    const env = compose().services.kong!.environment!;
    expect(env.KONG_ADMIN_LISTEN).toBe('127.0.0.1:8001');
    expect(env.KONG_ADMIN_GUI_LISTEN).toBe('off');
    expect(env.KONG_PROXY_LISTEN).toContain('8443 ssl');
  });

  it('holds no password: databases read secret files, clients read 0600 env files', () => {
    const text = renderCompose('/srv/x', config);
    expect(text).not.toMatch(/PASSWORD:\s*\S+\s*$/m);
    expect(text).not.toMatch(/\b(admin\/admin|kong\/kong|POSTGRES_PASSWORD: )/);
    const s = compose().services;
    expect(s['kong-database']!.environment!.POSTGRES_PASSWORD_FILE).toMatch(/^\/run\/secrets\//);
    expect(s['hapi-database']!.environment!.POSTGRES_PASSWORD_FILE).toMatch(/^\/run\/secrets\//);
    expect(s.kong!.env_file).toEqual(['../secrets/kong-db.env', '../secrets/kong-tls.env']);
    expect(s.hapi!.env_file).toEqual(['../secrets/hapi-db.env']);
  });

  it('pins Kong 3.9, HAPI and Postgres; HAPI on Postgres with the HAPI dialect; the API built from the Dockerfile', () => {
    const s = compose().services;
    expect(IMAGES.kong).toMatch(/^kong:3\.9\.\d+$/);
    for (const svc of Object.values(s)) expect(svc.image ?? '').not.toMatch(/:latest$|^[^:]+$/);
    expect(s.hapi!.image).toBe(IMAGES.hapi);
    expect(s.hapi!.environment!.SPRING_JPA_PROPERTIES_HIBERNATE_DIALECT).toBe('ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect');
    expect(s.hapi!.environment!.SPRING_DATASOURCE_URL).toMatch(/^jdbc:postgresql:\/\/hapi-database:5432\//);
    expect(s['hospital-api']!.build).toMatchObject({ dockerfile: 'Dockerfile' });
  });

  it('quotes values, so a directory name cannot inject YAML; names a stable project per directory', () => {
    expect(compose('/a').name).toBe(compose('/a').name);
    expect(compose('/a').name).not.toBe(compose('/b').name);
    expect(renderTemplate('x: {{v}}\n', { v: 'a: b\ny: z' })).toBe('x: "a: b\\ny: z"\n');
    expect(() => renderTemplate('{{missing}}', {})).toThrow(/missing/);
  });
});
