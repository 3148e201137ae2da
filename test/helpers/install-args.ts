/**
 * The arguments of `hospital-api install` as the tests give them, for every runtime: the one
 * place a test builds an install command (a rerun repeats the same array).
 */
import type { InstallPorts, RuntimeName } from '../../src/install-dir/install-config.js';
import { PLATFORM_CARE_ID_SYSTEM } from '../../src/fhir-data/generate/model.js';

/** Each port's install flag, in the order they are given. */
const PORT_FLAGS: ReadonlyArray<readonly [keyof InstallPorts, string]> = [
  ['api', '--api-port'],
  ['fhir', '--fhir-port'],
  ['gatewayHttp', '--gateway-http-port'],
  ['gatewayHttps', '--gateway-https-port'],
  ['gatewayAdmin', '--gateway-admin-port'],
  ['metrics', '--metrics-port'],
];

/** The install flags that put each component given on its port. */
export function portFlags(p: Partial<InstallPorts>): string[] {
  return PORT_FLAGS.flatMap(([name, flag]) => (p[name] === undefined ? [] : [flag, String(p[name])]));
}

export interface InstallArgsOptions {
  /** --runtime; none lets install choose (what the runtime-choice tests check). */
  runtime?: RuntimeName;
  dir?: string;
  host?: string;
  bindAddress?: string;
  /** --generate-ca (default); false on a rerun that keeps the TLS material. */
  generateCa?: boolean;
  /** --platform-url, with the generated data's care-id system as --identifier-system. */
  platformUrl?: string;
  ports?: Partial<InstallPorts>;
  /** Image flags (--kong-image …), or any other flags, after the ports. */
  extra?: readonly string[];
  json?: boolean;
  noStart?: boolean;
}

export function installArgs(o: InstallArgsOptions): string[] {
  return [
    'install',
    ...(o.runtime ? ['--runtime', o.runtime] : []),
    ...(o.dir ? ['--dir', o.dir] : []),
    ...(o.host ? ['--host', o.host] : []),
    ...(o.bindAddress ? ['--bind-address', o.bindAddress] : []),
    ...(o.generateCa === false ? [] : ['--generate-ca']),
    ...(o.platformUrl ? ['--platform-url', o.platformUrl, '--identifier-system', PLATFORM_CARE_ID_SYSTEM] : []),
    ...portFlags(o.ports ?? {}),
    ...(o.extra ?? []),
    ...(o.noStart ? ['--no-start'] : []),
    ...(o.json ? ['--json'] : []),
  ];
}
