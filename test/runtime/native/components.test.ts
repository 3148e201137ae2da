/** Component specs from a real install directory: bind choice, admin on loopback, API gating. */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { API_MALLOC_ENV, componentSpecs, publicBindHost } from '../../../src/runtime/native/components.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { makeNativeInstall } from '../../helpers/native-install.js';

afterAll(removeTempDirs);

describe('native component specs', () => {
  it('binds public ports on loopback for loopback hosts, all interfaces otherwise; admin always loopback', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    expect(publicBindHost(config)).toBe('127.0.0.1');
    const wide = { ...config, hosts: ['hospital.example.org', 'localhost'] };
    expect(publicBindHost(wide)).toBe('0.0.0.0');
    const gateway = componentSpecs(dir, wide).find((s) => s.name === 'gateway')!;
    expect(gateway.args).toContain(`127.0.0.1:${config.ports.gatewayAdmin}`);
    expect(gateway.args).toContain(`0.0.0.0:${config.ports.gatewayHttps}`);
    expect(gateway.ports[0]).toEqual({ host: '127.0.0.1', port: config.ports.gatewayAdmin });
  });

  it("gives the API install.json's metrics port unless hospital-api.env sets METRICS_LISTEN", async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    writeFileSync(installPaths(dir).apiEnv, 'FHIR_API_KEY="k"\nPLATFORM_API_URL="http://127.0.0.1:9"\nPLATFORM_IDENTIFIER_SYSTEM="urn:x"\n');
    const api = componentSpecs(dir, config).find((s) => s.name === 'api')!;
    expect(api.env).toEqual({ METRICS_LISTEN: `127.0.0.1:${config.ports.metrics}`, HOSPITAL_API_DIR: installPaths(dir).root, ...API_MALLOC_ENV });
    expect(api.ports).toContainEqual({ host: '127.0.0.1', port: config.ports.metrics });
    expect(api.blocked).toBeUndefined();

    writeFileSync(installPaths(dir).apiEnv, 'PLATFORM_API_URL="http://127.0.0.1:9"\nMETRICS_LISTEN="off"\n');
    const held = componentSpecs(dir, config).find((s) => s.name === 'api')!;
    expect(held.env).toEqual({ HOSPITAL_API_DIR: installPaths(dir).root, ...API_MALLOC_ENV });
    expect(held.ports).toEqual([{ host: '127.0.0.1', port: config.ports.api }]);
    expect(held.blocked).toMatch(/FHIR_API_KEY and PLATFORM_IDENTIFIER_SYSTEM not set .*consumer create.* and `hospital-api install --dir .* --identifier-system/);

    // An install from before PLATFORM_IDENTIFIER_SYSTEM: held back, naming the command that sets it.
    writeFileSync(installPaths(dir).apiEnv, 'FHIR_API_KEY="k"\nPLATFORM_API_URL="http://127.0.0.1:9"\n');
    expect(componentSpecs(dir, config).find((s) => s.name === 'api')!.blocked).toBe(
      `PLATFORM_IDENTIFIER_SYSTEM not set in hospital-api.env: run \`hospital-api install --dir ${installPaths(dir).root} --identifier-system <the platform's identifier system URI>\``,
    );
    // Any system, said explicitly, starts it.
    writeFileSync(installPaths(dir).apiEnv, 'FHIR_API_KEY="k"\nPLATFORM_API_URL="http://127.0.0.1:9"\nPLATFORM_ANY_IDENTIFIER_SYSTEM="true"\n');
    expect(componentSpecs(dir, config).find((s) => s.name === 'api')!.blocked).toBeUndefined();
  });

  it('caps the API\'s malloc arenas the same way in the hospital-api image', () => {
    // the image runs only the API; its ENV lines must say what the native spec says
    const dockerfile = readFileSync(new URL('../../../Dockerfile', import.meta.url), 'utf8');
    const env = Object.fromEntries([...dockerfile.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
    for (const [k, v] of Object.entries(API_MALLOC_ENV)) expect(env[k], k).toBe(v);
    expect(Object.keys(API_MALLOC_ENV)).toEqual(['MALLOC_ARENA_MAX']);
  });
});
