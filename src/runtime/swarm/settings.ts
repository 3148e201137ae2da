/**
 * The Docker Swarm runtime's install settings (install.json `swarm`) from the
 * install flags: flags first, then what a previous install chose, then the
 * defaults. Every value is checked here, before install writes anything;
 * a bad one is refused naming its flag (ERR_INSTALL_BAD_OPTION).
 */
import { HospitalApiError } from '../../errors/index.js';
import type { SwarmDatabase, SwarmSettings } from '../../install-dir/install-config.js';
import type { RuntimeFlags } from '../profile.js';
import { IMAGES } from '../container/images.js';
import { readFileSync } from 'node:fs';
import { parsePemBundle } from '../../tls/inspect.js';

/** Replicas of the gateway, FHIR server and API when no flag and no previous install says otherwise. */
export const DEFAULT_REPLICAS = Object.freeze({ gateway: 2, fhir: 2, api: 2 });

/**
 * HAPI replicas the stack's own FHIR database carries: HAPI's starter pools 10 connections per
 * replica (hapi-fhir-jpaserver-starter application.yaml, `hikari.maximum-pool-size: 10`) and
 * Postgres accepts 100 by default (PostgreSQL docs, `max_connections`); more need a database
 * the hospital sized (--fhir-database-url).
 */
export const MAX_FHIR_REPLICAS_ON_OWN_DATABASE = 6;

/** A node's name or ID as `docker node update` takes it: letters, digits, `.`, `_`, `-`. */
const NODE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A database name or user in a URL: what Postgres takes unquoted (no `$`: the stack file would interpolate it), plus `-`. */
const PG_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

/** A database host in a URL: a DNS name, an IPv4 address, or an IPv6 address in brackets. */
const PG_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])$/;

function bad(name: string, detail: string): HospitalApiError {
  return new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name, detail });
}

function replicas(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[1-9]$/.test(value)) throw bad(flag, `expected a whole number from 1 to 9, got "${value}"`);
  return Number(value);
}

/**
 * `postgres://user@host[:port]/database` → the same, normalised. A password is refused: a command
 * line is visible to every local user in `ps` (proc(5), /proc/<pid>/cmdline), so it never belongs in
 * a flag; the value is never echoed back, in case it holds one.
 */
export function databaseUrl(flag: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(flag, 'is not a URL; expected postgres://user@host:5432/database');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw bad(flag, `must be postgres://user@host:5432/database, not ${url.protocol}`);
  if (url.password !== '') throw bad(flag, 'must not carry a password: a command line shows in `ps` to every user of this host; the password is read from a file');
  if (!PG_HOST.test(url.hostname)) throw bad(flag, 'needs a host name or address (postgres://user@host/database)');
  const user = decodeURIComponent(url.username);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!PG_NAME.test(user)) throw bad(flag, 'needs a user (postgres://user@host/database)');
  if (!PG_NAME.test(database)) throw bad(flag, 'needs a database name (postgres://user@host/database)');
  if (url.search !== '' || url.hash !== '') throw bad(flag, 'takes no query or fragment');
  return `postgres://${user}@${url.host}/${database}`;
}

function database(which: 'kong' | 'fhir', flags: RuntimeFlags, previous: SwarmDatabase | undefined): SwarmDatabase {
  const nodeFlag = `--${which}-database-node`;
  const urlFlag = `--${which}-database-url`;
  const node = which === 'kong' ? flags.kongDatabaseNode : flags.fhirDatabaseNode;
  const url = which === 'kong' ? flags.kongDatabaseUrl : flags.fhirDatabaseUrl;
  if (node !== undefined && url !== undefined) throw bad(nodeFlag, `cannot be combined with ${urlFlag}: the database runs on a node of the swarm or outside it`);
  if (url !== undefined) return { url: databaseUrl(urlFlag, url) };
  if (node !== undefined) {
    if (!NODE.test(node)) throw bad(nodeFlag, `"${node}" is not a node name or ID (letters, digits, ".", "_", "-")`);
    return { node };
  }
  return previous ?? { node: null };
}

function onOff(flag: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value !== 'on' && value !== 'off') throw bad(flag, `expected on or off, got "${value}"`);
  return value === 'on';
}

/** Bundles larger than this are not a CA file (a Swarm secret holds at most 500 KB). */
const MAX_CA_BYTES = 256 * 1024;

/**
 * The CA bundle the hospital's Postgres server is verified against, read from --database-ca: every
 * certificate in it parses, and one at least is valid now. The bundle is public: it goes in
 * install.json, and to the tasks as a secret (secrets.ts) only because a secret is how a file
 * reaches a task on any node.
 */
function databaseCa(file: string | undefined, previous: string | null | undefined): string | null {
  if (file === undefined) return previous ?? null;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw bad('--database-ca', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (pem.length > MAX_CA_BYTES) throw bad('--database-ca', `${file} is larger than ${MAX_CA_BYTES / 1024} KiB; expected PEM CA certificates`);
  let certs;
  try {
    certs = parsePemBundle(pem, file);
  } catch (err) {
    throw bad('--database-ca', (err as Error).message);
  }
  const now = Date.now();
  if (!certs.some((c) => c.validFromDate.getTime() <= now && c.validToDate.getTime() > now)) throw bad('--database-ca', `no certificate in ${file} is valid now`);
  return `${certs.map((c) => c.toString().trim()).join('\n')}\n`;
}

/**
 * The swarm settings of an install.
 * @throws ERR_INSTALL_BAD_OPTION naming the flag
 */
export function swarmSettings(previous: SwarmSettings | undefined, flags: RuntimeFlags): SwarmSettings {
  const r = previous?.replicas ?? DEFAULT_REPLICAS;
  const settings: SwarmSettings = {
    images: {
      kong: flags.kongImage ?? previous?.images.kong ?? IMAGES.kong,
      hapi: flags.hapiImage ?? previous?.images.hapi ?? IMAGES.hapi,
      postgres: flags.postgresImage ?? previous?.images.postgres ?? IMAGES.postgres,
      api: flags.apiImage ?? previous?.images.api ?? null,
    },
    replicas: {
      gateway: replicas('--gateway-replicas', flags.gatewayReplicas, r.gateway),
      fhir: replicas('--fhir-replicas', flags.fhirReplicas, r.fhir),
      api: replicas('--api-replicas', flags.apiReplicas, r.api),
    },
    databases: { kong: database('kong', flags, previous?.databases.kong), fhir: database('fhir', flags, previous?.databases.fhir) },
    overlayEncryption: onOff('--overlay-encryption', flags.overlayEncryption, previous?.overlayEncryption ?? true),
    databaseCa: databaseCa(flags.databaseCa, previous?.databaseCa),
  };
  const outside = (['kong', 'fhir'] as const).filter((w) => 'url' in settings.databases[w]);
  if (outside.length > 0 && !settings.databaseCa) {
    throw bad(
      '--database-ca',
      `is needed with ${outside.map((w) => `--${w}-database-url`).join(' and ')}: the connection to a server outside the swarm carries patient data off the stack's network, so Kong, HAPI and backups verify the server against this CA (PEM)`,
    );
  }
  if ('node' in settings.databases.fhir && settings.replicas.fhir > MAX_FHIR_REPLICAS_ON_OWN_DATABASE) {
    throw bad(
      '--fhir-replicas',
      `${settings.replicas.fhir} HAPI replicas need more connections than the stack's own FHIR database accepts (at most ${MAX_FHIR_REPLICAS_ON_OWN_DATABASE}); use --fhir-database-url for a database sized for them`,
    );
  }
  return settings;
}
