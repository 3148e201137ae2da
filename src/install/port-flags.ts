/**
 * The port flags shared by `install` and the first run of `demo`: one list, so
 * both commands offer the same names with the same defaults.
 */
import type { Command } from 'commander';
import { DEFAULT_PORTS, type InstallPorts } from '../install-dir/install-config.js';

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
  { key: 'gatewayStatusPort', flag: '--gateway-status-port', port: 'gatewayStatus', help: 'gateway status listener (Prometheus /metrics) with --monitoring, loopback' },
] as const satisfies ReadonlyArray<{ key: string; flag: string; port: keyof InstallPorts; help: string }>;

export type PortFlags = { [F in (typeof PORT_FLAGS)[number] as F['key']]?: string };

/** Adds every port flag to a command; `prefix` qualifies the help text (e.g. "first run: "). */
export function addPortOptions(command: Command, prefix = ''): Command {
  for (const p of PORT_FLAGS) command.option(`${p.flag} <n>`, `${prefix}${p.help} (${DEFAULT_PORTS[p.port]})`);
  return command;
}

/** Docker runtime flags: the address published ports bind to, and each image (hospitals pull from their own registry). */
export const DOCKER_FLAGS = [
  { key: 'bindAddress', flag: '--bind-address', help: 'docker: host address the gateway HTTPS and API ports are published on (default 127.0.0.1 when every --host is loopback, else 0.0.0.0)' },
  { key: 'fhirBindAddress', flag: '--fhir-bind-address', help: 'docker: host address the FHIR port (unauthenticated) is published on (default 127.0.0.1; another address opens it to the network)' },
  { key: 'kongImage', flag: '--kong-image', help: 'docker: Kong image (default kong:3.9.3)' },
  { key: 'hapiImage', flag: '--hapi-image', help: 'docker: HAPI FHIR image (default hapiproject/hapi:v8.10.0-3)' },
  { key: 'postgresImage', flag: '--postgres-image', help: 'docker: Postgres image (default postgres:16.13)' },
  { key: 'apiImage', flag: '--api-image', help: "docker: a prebuilt hospital-api image (default: build this package's Dockerfile)" },
] as const;

export type DockerFlags = { [F in (typeof DOCKER_FLAGS)[number] as F['key']]?: string };

/** Adds each of `flags` as an option taking a value. */
function addValueOptions(command: Command, flags: ReadonlyArray<{ flag: string; help: string }>): Command {
  for (const d of flags) command.option(`${d.flag} <value>`, d.help);
  return command;
}

export function addDockerOptions(command: Command): Command {
  return addValueOptions(command, DOCKER_FLAGS);
}

/**
 * Docker Swarm runtime flags (issue 29): replicas, where the databases are, the overlay's encryption.
 * A database URL never carries a password (a command line shows in `ps`).
 */
export const SWARM_FLAGS = [
  { key: 'gatewayReplicas', flag: '--gateway-replicas', help: 'swarm: gateway (Kong) tasks, 1-9, one per node (default 2)' },
  { key: 'fhirReplicas', flag: '--fhir-replicas', help: 'swarm: FHIR server (HAPI) tasks, 1-9 (default 2)' },
  { key: 'apiReplicas', flag: '--api-replicas', help: 'swarm: Hospital API tasks, 1-9, one per node (default 2)' },
  { key: 'kongDatabaseNode', flag: '--kong-database-node', help: "swarm: the node that keeps Kong's database (install labels it)" },
  { key: 'fhirDatabaseNode', flag: '--fhir-database-node', help: "swarm: the node that keeps HAPI's database (install labels it)" },
  { key: 'kongDatabaseUrl', flag: '--kong-database-url', help: "swarm: Kong's database outside the swarm, postgres://user@host:5432/db (no password in it)" },
  { key: 'fhirDatabaseUrl', flag: '--fhir-database-url', help: "swarm: HAPI's database outside the swarm, postgres://user@host:5432/db (no password in it)" },
  { key: 'databaseCa', flag: '--database-ca', help: "swarm: PEM file of the CA that signed the certificate of the Postgres server a --*-database-url names (verified: the connection leaves the swarm)" },
  { key: 'overlayEncryption', flag: '--overlay-encryption', help: 'swarm: on or off, IPsec between nodes on the stack network (default on)' },
] as const;

export type SwarmFlags = { [F in (typeof SWARM_FLAGS)[number] as F['key']]?: string };

export function addSwarmOptions(command: Command): Command {
  return addValueOptions(command, SWARM_FLAGS);
}
