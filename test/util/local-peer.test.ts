/**
 * Issue 24: on a shared host, the native admin API (keys, password hashes) and
 * the FHIR server's full API (every patient) answered every local account on
 * 127.0.0.1. They now answer their own user and root only, the kernel telling
 * who owns the calling socket (/proc/net/tcp). Real sockets on loopback; the
 * other account is `nobody`, reached with runuser (root only: CI runs as root).
 */
import { execa } from 'execa';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { loopbackPeerUid, ownerIn, peerTableReads, procAddresses } from '../../src/util/local-peer.js';
import { startFhir } from '../helpers/fhir-server.js';
import { closeGatewayAdmins, gatewayAdmin } from '../helpers/gateway-admin.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

const linux = existsSync('/proc/net/tcp');
const canSwitchUser = linux && process.getuid?.() === 0 && existsSync('/usr/sbin/runuser') && existsSync('/usr/bin/curl');
afterAll(async () => {
  await closeGatewayAdmins();
  removeTempDirs();
});

/** The accepted socket of a connection from this process to a server on `host`. */
async function accepted(listen: string, to: string): Promise<{ socket: Socket; close(): void }> {
  const server = createServer();
  server.listen(0, listen);
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const got = once(server, 'connection') as Promise<[Socket]>;
  const client = connect(port, to);
  const [socket] = await got;
  return { socket, close: () => (client.destroy(), socket.destroy(), server.close()) };
}

/** HTTP status of a GET made by the local account `nobody`. */
async function statusAsNobody(url: string): Promise<string> {
  const r = await execa('runuser', ['-u', 'nobody', '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', url], { reject: false });
  return String(r.stdout);
}

describe('who is calling on loopback', () => {
  it('writes addresses as /proc/net/tcp and tcp6 do', () => {
    expect(procAddresses('127.0.0.1', 8080)).toEqual(['0100007F:1F90', '0000000000000000FFFF00000100007F:1F90']);
    expect(procAddresses('::ffff:127.0.0.1', 8080)).toEqual(['0100007F:1F90', '0000000000000000FFFF00000100007F:1F90']);
    expect(procAddresses('::1', 1)).toEqual(['00000000000000000000000001000000:0001']);
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000   104        0 1 1',
      '   1: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 2 1',
    ].join('\n');
    // the caller's socket is the one whose local end is the peer (port 0xD431)
    expect(ownerIn(table, procAddresses('127.0.0.1', 0xd431), procAddresses('127.0.0.1', 8080))).toBe(1000);
    expect(ownerIn(table, procAddresses('127.0.0.1', 1), procAddresses('127.0.0.1', 8080))).toBeNull();
    // the server's own line (local 8080, remote 0xD431) is not the caller's
    expect(ownerIn(table, procAddresses('127.0.0.1', 8080), procAddresses('127.0.0.1', 0xd431))).toBe(104);
    // an address is matched whole: 0100007F:1F90 inside the IPv4-mapped form is not it
    const v6 = '   0: 0000000000000000FFFF00000100007F:D431 0000000000000000FFFF00000100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 2 1';
    expect(ownerIn(v6, ['0100007F:D431'], ['0100007F:1F90'])).toBeNull();
    expect(ownerIn(v6, procAddresses('127.0.0.1', 0xd431), procAddresses('127.0.0.1', 8080))).toBe(1000);
  });

  // Slow bodies on the FHIR and admin ports (attack bench): each new connection read and split the whole
  // table, which lists every socket of the host, so a burst of reconnects blocked the honest caller's path.
  it.skipIf(!linux)('answers a burst of new connections from shared reads of the table, each with its own caller', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const sockets: Socket[] = [];
    const clients: Socket[] = [];
    server.on('connection', (s) => sockets.push(s));
    try {
      for (let i = 0; i < 50; i += 1) clients.push(connect(port, '127.0.0.1'));
      await until(() => sockets.length === 50, { what: '50 accepted connections' });
      const before = peerTableReads();
      const uids = await Promise.all(sockets.map((s) => loopbackPeerUid(s)));
      expect(uids).toEqual(sockets.map(() => process.getuid?.()));
      expect(peerTableReads() - before).toBeLessThanOrEqual(2);
      // a lookup asked after those reads is answered by a new read (never by an older table)
      expect(await loopbackPeerUid(sockets[0]!)).toBe(process.getuid?.());
      expect(peerTableReads() - before).toBeLessThanOrEqual(3);
    } finally {
      for (const c of clients) c.destroy();
      for (const s of sockets) s.destroy();
      server.close();
    }
  });

  it.skipIf(!linux)('finds this process as the caller, over IPv4 and to a dual-stack listener', async () => {
    for (const [listen, to] of [['127.0.0.1', '127.0.0.1'], ['::', '127.0.0.1'], ['::1', '::1']] as const) {
      const c = await accepted(listen, to).catch(() => null);
      if (!c) continue; // no IPv6 on this host
      try {
        expect(await loopbackPeerUid(c.socket), `${listen} ← ${to}`).toBe(process.getuid?.());
      } finally {
        c.close();
      }
    }
  });
});

describe.skipIf(!canSwitchUser)('another local account (nobody)', () => {
  it('gets GET /fhir/metadata and nothing else from the FHIR server; its own user gets the full API', async () => {
    const fhir = await startFhir(tempDir('local-peer-fhir-'));
    try {
      expect(await statusAsNobody(`${fhir.base}/metadata`)).toBe('200');
      expect(await statusAsNobody(`${fhir.base}/Patient`)).toBe('403');
      expect((await request(`${fhir.base}/Patient`)).statusCode).toBe(200);
    } finally {
      await fhir.stop();
    }
  });

  it('gets 403 from the native admin API, before anything is read; its own user gets the consumers', async () => {
    const g = await gatewayAdmin();
    expect(await statusAsNobody(`${g.url}/consumers`)).toBe('403');
    expect(await statusAsNobody(`${g.url}/status`)).toBe('403');
    const mine = await request(`${g.url}/consumers`);
    expect(mine.statusCode).toBe(200);
    await mine.body.dump();
  });
});
