/**
 * The port flags shared by `install` and the first run of `demo`: one list, so
 * both commands offer the same names with the same defaults.
 */
import type { Command } from 'commander';
import { DEFAULT_PORTS, type InstallPorts } from '../runtime/install-config.js';

export const PORT_FLAGS = [
  { key: 'apiPort', flag: '--api-port', port: 'api', help: 'Hospital API port' },
  { key: 'fhirPort', flag: '--fhir-port', port: 'fhir', help: 'FHIR server port' },
  { key: 'gatewayHttpPort', flag: '--gateway-http-port', port: 'gatewayHttp', help: 'gateway HTTP port' },
  { key: 'gatewayHttpsPort', flag: '--gateway-https-port', port: 'gatewayHttps', help: 'gateway HTTPS port' },
  {
    key: 'gatewayAdminPort',
    flag: '--gateway-admin-port',
    port: 'gatewayAdmin',
    help: 'gateway admin port, loopback or in-container only',
  },
  { key: 'metricsPort', flag: '--metrics-port', port: 'metrics', help: 'Hospital API metrics port, loopback' },
] as const satisfies ReadonlyArray<{ key: string; flag: string; port: keyof InstallPorts; help: string }>;

export type PortFlags = { [F in (typeof PORT_FLAGS)[number] as F['key']]?: string };

/** Adds every port flag to a command; `prefix` qualifies the help text (e.g. "first run: "). */
export function addPortOptions(command: Command, prefix = ''): Command {
  for (const p of PORT_FLAGS) command.option(`${p.flag} <n>`, `${prefix}${p.help} (${DEFAULT_PORTS[p.port]})`);
  return command;
}
