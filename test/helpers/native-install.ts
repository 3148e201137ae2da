/**
 * The one way tests make a real native installation: ephemeral ports on
 * loopback, and the real CLI's `install --runtime native --generate-ca` (its
 * CA, gateway and signer certificates), then optionally the consumer whose key
 * the Hospital API uses (`consumer create --write-env`, which starts the stack).
 */
import { expect } from 'vitest';
import type { InstallPorts } from '../../src/install-dir/install-config.js';
import { freePort } from '../../src/util/port-check.js';
import { runCli } from './cli.js';

/** One free loopback port per component. */
export async function testPorts(): Promise<InstallPorts> {
  return {
    api: await freePort(),
    fhir: await freePort(),
    gatewayHttp: await freePort(),
    gatewayHttps: await freePort(),
    gatewayAdmin: await freePort(),
    metrics: await freePort(),
  };
}

/** The install flags that put each component on its port. */
export function portFlags(p: InstallPorts): string[] {
  return [
    '--api-port', String(p.api), '--fhir-port', String(p.fhir), '--gateway-http-port', String(p.gatewayHttp),
    '--gateway-https-port', String(p.gatewayHttps), '--gateway-admin-port', String(p.gatewayAdmin), '--metrics-port', String(p.metrics),
  ];
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
  const installArgs = ['install', '--runtime', 'native', '--dir', dir, ...(options.host ? ['--host', options.host] : []), '--generate-ca',
    '--platform-url', options.platformUrl ?? `http://127.0.0.1:${await freePort()}`, ...portFlags(ports), '--json'];
  const installed = await runCli(installArgs);
  expect(installed.exitCode, String(installed.stderr)).toBe(0);
  let key = '';
  if (options.consumer) {
    const consumer = await runCli(['consumer', 'create', options.consumer, '--write-env', '--dir', dir]);
    expect(consumer.exitCode, String(consumer.stderr)).toBe(0);
    key = String(consumer.stdout).trim();
  }
  return { dir, ports, installArgs, key };
}
