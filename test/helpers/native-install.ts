/**
 * The one way tests make a real native installation: ephemeral ports on
 * loopback, and the real CLI's `install --runtime native --generate-ca` (its
 * CA, gateway and signer certificates), then optionally the consumer whose key
 * the Hospital API uses (`consumer create --write-env`, which starts the stack);
 * or, for tests of the supervisor, logs and install-directory handling that need
 * no certificates, only the two files those read (makeNativeInstall).
 */
import { writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { INSTALL_FORMAT, writeInstallConfig, type InstallConfig, type InstallPorts } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { freePort, freePorts } from '../../src/util/port-check.js';
import { PLATFORM_CARE_ID_SYSTEM } from '../../src/fhir-data/generate/model.js';
import { runCli } from './cli.js';
import { installArgs } from './install-args.js';

const COMPONENT_PORTS = ['api', 'fhir', 'gatewayHttp', 'gatewayHttps', 'gatewayAdmin', 'metrics'] as const satisfies ReadonlyArray<keyof InstallPorts>;

/** One free loopback port per component, and one per name in `extra` (a platform stand-in's), all distinct. */
export async function testPorts<E extends string = never>(...extra: E[]): Promise<InstallPorts & Record<E, number>> {
  const names = [...COMPONENT_PORTS, ...extra];
  const ports = await freePorts(names.length);
  return Object.fromEntries(names.map((name, i) => [name, ports[i]!])) as InstallPorts & Record<E, number>;
}

export interface NativeInstall {
  dir: string;
  ports: InstallPorts;
  /** The install command's arguments (a rerun repeats them). */
  installArgs: string[];
  /** The consumer's key (empty without a consumer). */
  key: string;
}

/**
 * Installs natively in `dir` through the CLI (the platform URL: `platformUrl`,
 * or a free port where nothing answers), and creates `consumer` when given;
 * both must succeed.
 */
export async function installNative(options: { dir: string; platformUrl?: string; host?: string; consumer?: string; ports?: InstallPorts }): Promise<NativeInstall> {
  const { dir } = options;
  const ports = options.ports ?? (await testPorts());
  const args = installArgs({ runtime: 'native', dir, ...(options.host ? { host: options.host } : {}), platformUrl: options.platformUrl ?? `http://127.0.0.1:${await freePort()}`, ports, json: true });
  const installed = await runCli(args);
  expect(installed.exitCode, String(installed.stderr)).toBe(0);
  let key = '';
  if (options.consumer) {
    const consumer = await runCli(['consumer', 'create', options.consumer, '--write-env', '--dir', dir]);
    expect(consumer.exitCode, String(consumer.stderr)).toBe(0);
    key = String(consumer.stdout).trim();
  }
  return { dir, ports, installArgs: args, key };
}

/** A minimal native install directory, install.json and the API's env file, on ephemeral ports: no CLI, no certificates. */
export async function makeNativeInstall(dir: string, options: { withKey?: boolean } = {}): Promise<InstallConfig> {
  const config: InstallConfig = {
    formatVersion: INSTALL_FORMAT,
    runtime: 'native',
    hosts: ['127.0.0.1', 'localhost'],
    ports: await testPorts(),
    platformApiUrl: 'http://127.0.0.1:9/platform',
    caGenerated: true,
    cors: { origins: ['*'], headers: null, exposedHeaders: null },
    toolkitVersion: '0.0.0-test',
    installedAt: new Date().toISOString(),
    demo: false,
  };
  writeInstallConfig(dir, config);
  const key = options.withKey === false ? '' : 'FHIR_API_KEY="test-key-not-secret"\n';
  writeFileSync(installPaths(dir).apiEnv, `PLATFORM_API_URL="http://127.0.0.1:9/platform"\nPLATFORM_IDENTIFIER_SYSTEM="${PLATFORM_CARE_ID_SYSTEM}"\nMETRICS_LISTEN="127.0.0.1:${config.ports.metrics}"\n${key}`, { mode: 0o600 });
  return config;
}
