/**
 * Scheduled acceptance on docker (issue 46): `install --verify-every` adds two services to the compose
 * project, and neither gets the engine's socket (access to it is root on the host).
 *
 * - `acceptance` runs `hospital-api verify --scheduled` on the interval, from the host's network
 *   namespace (`network_mode: host`), so its probes reach the published ports exactly where `verify` on
 *   the host reaches them (loopback included), and with the install directory mounted read-only at its
 *   own path (reports/ writable), as the install directory's owner: the record-signing key stays 0600,
 *   readable by that user only, and records are that user's, as `verify` on the host writes them.
 * - `acceptance-relay` shares the kong container's network namespace (`network_mode: "service:kong"`,
 *   Compose file reference; Docker docs "docker run --network container:<name>"), where Kong's admin
 *   API listens on 127.0.0.1:8001 and where names resolve as Kong resolves them (a container joining
 *   another's network namespace gets its /etc/hosts and /etc/resolv.conf). It answers the acceptance
 *   service on a unix socket in a folder only the two share (0700, their user's): one admin read
 *   (GET only), or one resolution of host names, per request. Nothing is published, and a local account without that
 *   user's rights cannot reach the socket.
 *
 * Inside `acceptance`, the docker runtime (index.ts) sees HOSPITAL_API_ACCEPTANCE_RELAY and takes the
 * admin API, the gateway's name resolution and the FHIR listeners from the relay; the components'
 * state, which `docker inspect` gives on the host, from their own answers (insideComponents).
 */
import { chmodSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { Client, request } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import { resolveHere } from '../gateway-reach.js';
import type { AdminResponse, ComponentState, HostResolution } from '../types.js';
import { ADMIN_URL, adminBody } from '../container/admin.js';

export const ACCEPTANCE_SERVICE = 'acceptance';
export const RELAY_SERVICE = 'acceptance-relay';
/** Set in the acceptance service's environment: the relay's socket (its presence is what says "inside"). */
export const RELAY_ENV = 'HOSPITAL_API_ACCEPTANCE_RELAY';
/** Where both containers see the shared folder (<install dir>/docker/acceptance-relay on the host). */
export const RELAY_MOUNT = '/run/hospital-api-relay';
export const RELAY_SOCKET = `${RELAY_MOUNT}/relay.sock`;

/** A request to the relay is small (a Kong entity, a list of names): anything larger is refused. */
const MAX_REQUEST_BYTES = 1 << 20;
/**
 * Reads only: acceptance never changes the gateway (its one admin caller is the snapshot's GET,
 * src/checks/gateway-snapshot.ts), so the relay refuses every other method and a compromised
 * acceptance container cannot reconfigure Kong through it.
 */
const METHODS = new Set(['GET']);

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) throw new Error('request too large');
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** An admin path: absolute, no scheme or authority, so the call cannot leave 127.0.0.1:8001. */
function adminPath(path: unknown): string | null {
  return typeof path === 'string' && path.startsWith('/') && !path.startsWith('//') && !/[\s\\]/.test(path) && path.length <= 4096 ? path : null;
}

/** One admin call from inside the gateway's network namespace. */
async function callAdmin(admin: string, method: string, path: string, body: unknown): Promise<AdminResponse> {
  const res = await request(`${admin}${path}`, {
    method: method as 'GET',
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.statusCode, body: adminBody(await res.body.text()) };
}

/**
 * The relay: POST /admin {method, path, body?} → {status, body}; POST /resolve {hosts} → [[host, resolution]].
 * `admin` is Kong's admin API as the relay reaches it (tests give their own).
 */
export function relayServer(admin = ADMIN_URL): ReturnType<typeof createServer> {
  return createServer((req, res) => {
    void (async () => {
      try {
        if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' });
        const input = (await readJson(req)) as { method?: unknown; path?: unknown; body?: unknown; hosts?: unknown };
        if (req.url === '/admin') {
          const path = adminPath(input.path);
          if (typeof input.method !== 'string' || !METHODS.has(input.method) || path === null) return reply(res, 400, { error: 'method or path refused' });
          try {
            return reply(res, 200, await callAdmin(admin, input.method, path, input.body));
          } catch (err) {
            return reply(res, 502, { error: `the admin API does not answer: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` });
          }
        }
        if (req.url === '/resolve') {
          const hosts = Array.isArray(input.hosts) ? input.hosts.filter((h): h is string => typeof h === 'string').slice(0, 1000) : null;
          if (hosts === null) return reply(res, 400, { error: 'hosts: a list of names' });
          // a Map with names from the caller: sent as entries, never as an object keyed by them (__proto__)
          return reply(res, 200, [...(await resolveHere(hosts)).entries()]);
        }
        return reply(res, 404, { error: 'no such call' });
      } catch (err) {
        return reply(res, 400, { error: (err as Error).message.slice(0, 200) });
      }
    })();
  });
}

/** Listens on `socket` (an old socket file removed first), mode 0600. */
export async function startRelay(socket: string, admin = ADMIN_URL): Promise<ReturnType<typeof createServer>> {
  rmSync(socket, { force: true });
  const server = relayServer(admin);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
  chmodSync(socket, 0o600);
  return server;
}

/** One call to the relay listening on `socket`. @throws ERR_INSTALL_ADMIN_UNREACHABLE */
async function relayCall(socket: string, route: '/admin' | '/resolve', payload: unknown): Promise<unknown> {
  const client = new Client('http://relay', { socketPath: socket, headersTimeout: 60_000, bodyTimeout: 60_000 });
  try {
    const res = await client.request({ method: 'POST', path: route, body: JSON.stringify(payload), headers: { 'content-type': 'application/json' } });
    const body = (await res.body.json()) as unknown;
    if (res.statusCode !== 200) throw new Error(String((body as { error?: unknown })?.error ?? `status ${res.statusCode}`));
    return body;
  } catch (err) {
    throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: `through the acceptance relay (${RELAY_SERVICE}): ${(err as Error).message}`.slice(0, 300) });
  } finally {
    await client.close();
  }
}

export async function relayAdmin(socket: string, method: string, path: string, body?: unknown): Promise<AdminResponse> {
  return (await relayCall(socket, '/admin', { method, path, ...(body === undefined ? {} : { body }) })) as AdminResponse;
}

export async function relayResolve(socket: string, hosts: readonly string[]): Promise<Map<string, HostResolution>> {
  const entries = (await relayCall(socket, '/resolve', { hosts })) as Array<[string, HostResolution]>;
  return new Map(entries);
}

// `node dist/runtime/docker/acceptance.js --relay <socket>`: the acceptance-relay service's command.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--relay');
  const socket = i > 0 ? process.argv[i + 1] : undefined;
  if (!socket) {
    process.stderr.write('usage: acceptance.js --relay <socket>\n');
    process.exit(2);
  }
  const server = await startRelay(socket);
  process.stderr.write(`acceptance relay: listening on ${socket}, admin API ${ADMIN_URL}\n`);
  const stop = (): void => void server.close(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** What the acceptance service can ask instead of `docker inspect`: each component's own answer. */
export interface InsideProbes {
  admin(method: 'GET', path: string): Promise<AdminResponse>;
  /** True when the URL answers 200 (and `expectBody`, when given). */
  answers(url: string, expectBody?: string): Promise<boolean>;
  apiHealthUrl: string;
  fhirUrl: string;
}

/**
 * The components as the acceptance service sees them, without the engine: Kong by its admin API's
 * /status, Kong's database by what that status says of it, HAPI and the FHIR door by /fhir/metadata
 * through the door's published port, the Hospital API by its health check there. The containers
 * nothing answers for (hapi-database, hapi-pidns, hapi-watchdog) are not listed: `verify` on the host
 * reads them from the engine (docs/operations.md).
 */
export async function insideComponents(p: InsideProbes): Promise<ComponentState[]> {
  const seen = 'answers (seen from the acceptance service)';
  const state = (name: string, up: boolean, why: string): ComponentState => ({ name, state: up ? 'up' : 'down', detail: up ? seen : why });
  let kong: AdminResponse | null = null;
  try {
    kong = await p.admin('GET', '/status');
  } catch {
    kong = null;
  }
  const database = (kong?.body as { database?: { reachable?: unknown } } | null)?.database?.reachable === true;
  const [fhir, api] = await Promise.all([p.answers(p.fhirUrl), p.answers(p.apiHealthUrl, '{}')]);
  return [
    state('fhir-door', fhir, `no answer at ${p.fhirUrl}`),
    state('hapi', fhir, `no answer at ${p.fhirUrl} (through the FHIR door)`),
    state('hospital-api', api, `no answer at ${p.apiHealthUrl}`),
    state('kong', kong?.status === 200, kong ? `admin API /status answered ${kong.status}` : 'the admin API does not answer'),
    state('kong-database', database, 'Kong reports its database unreachable'),
  ];
}

/** A string as a YAML scalar Compose does not interpolate (`$` doubled). */
const literal = (s: string): string => JSON.stringify(s.replaceAll('$', '$$$$'));

/**
 * The two services `install --verify-every` adds to templates/compose.yaml (none without it, so
 * `--verify-every off` and the next `up --remove-orphans` remove them). `root` is the install
 * directory, `user` its owner's uid:gid (the installer's, as the files are), `everyS` the interval:
 * the next run starts that long after the previous one ended, so runs never overlap.
 */
export function acceptanceServices(root: string, everyS: number, apiImage: string, user: { uid: number; gid: number }): string {
  const u = literal(`${user.uid}:${user.gid}`);
  const hardening = ['    read_only: true', '    cap_drop: [ALL]', '    security_opt: ["no-new-privileges:true"]'];
  // A root install gives the copies under docker/ to the images' users (kong's, HAPI's, the API's; 0700):
  // verify on the host reads them as root, with root's capabilities; the scheduled run, as root without
  // any, needs DAC_OVERRIDE to read them too (one of Docker's default capabilities of a root container;
  // not DAC_READ_SEARCH, which would open open_by_handle_at(2)). The mounts stay read-only but reports/.
  const readAsRoot = user.uid === 0 ? ['    cap_add: [DAC_OVERRIDE]'] : [];
  return [
    '',
    '  # Scheduled acceptance (install --verify-every, issue 46; src/runtime/docker/acceptance.ts): no',
    "  # engine socket. The relay lives in kong's network namespace, where the admin API listens on",
    '  # 127.0.0.1:8001, and answers the acceptance service on a unix socket in ./acceptance-relay (0700).',
    `  ${RELAY_SERVICE}:`,
    `    image: ${literal(apiImage)}`,
    '    restart: unless-stopped',
    '    logging: *logging',
    '    network_mode: "service:kong"',
    `    user: ${u}`,
    '    entrypoint: ["node", "/app/dist/runtime/docker/acceptance.js"]',
    `    command: ["--relay", ${literal(RELAY_SOCKET)}]`,
    '    volumes:',
    `      - ${literal(`./acceptance-relay:${RELAY_MOUNT}`)}`,
    ...hardening,
    '    depends_on:',
    '      - kong',
    '',
    "  # `verify --scheduled` every interval, from the host's network namespace (the published ports as",
    '  # verify on the host reaches them), the install directory read-only at its own path and reports/',
    "  # writable, as the directory's owner (the record-signing key stays 0600, that user's).",
    `  ${ACCEPTANCE_SERVICE}:`,
    `    image: ${literal(apiImage)}`,
    '    restart: unless-stopped',
    '    logging: *logging',
    '    network_mode: host',
    `    user: ${u}`,
    `    entrypoint: ["sh", "-c", "while :; do node /app/bin/hospital-api.js verify --scheduled --dir \\"$$0\\"; sleep \\"$$1\\"; done", ${literal(root)}, "${everyS}"]`,
    '    environment:',
    `      ${RELAY_ENV}: ${literal(RELAY_SOCKET)}`,
    '      NO_COLOR: "1"',
    '    volumes:',
    `      - ${literal(`${root}:${root}:ro`)}`,
    `      - ${literal(`${root}/reports:${root}/reports`)}`,
    `      - ${literal(`./acceptance-relay:${RELAY_MOUNT}`)}`,
    '    tmpfs:',
    '      - /tmp',
    ...hardening,
    ...readAsRoot,
    '    depends_on:',
    `      - ${RELAY_SERVICE}`,
    '',
  ].join('\n');
}
