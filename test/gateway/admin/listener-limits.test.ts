/**
 * Issue 12: "no time-out on request bodies (… gateway admin …): connections
 * that send headers and then trickle stayed open 233–291 s". The admin
 * listener answers 408 and closes a request whose headers or body do not
 * arrive in time, and caps its connections.
 */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAdminServer, type AdminServer } from '../../../src/gateway/admin/server.js';
import { openStore } from '../../../src/gateway/store/index.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';
import { STAND_IN_PLUGINS, TOOLKIT_VERSION } from './harness.js';

afterAll(() => removeTempDirs());

async function start(limits: Parameters<typeof startAdminServer>[0]['limits']): Promise<AdminServer> {
  const store = await openStore(join(tempDir('gw-limits-'), 'state.json'));
  return startAdminServer({ host: '127.0.0.1', port: 0, store, plugins: STAND_IN_PLUGINS, version: TOOLKIT_VERSION, limits });
}

/** Writes `head` and never more; resolves with everything the server sent once it closes the connection. */
function trickle(url: string, head: string): Promise<{ text: string; socket: Socket }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head));
    let text = '';
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve({ text, socket }));
  });
}

describe('admin listener limits', () => {
  it('answers 408 and closes a request whose body stops arriving, and one whose headers never end', async () => {
    const admin = await start({ headersTimeoutMs: 400, requestTimeoutMs: 800 });
    try {
      // Host must name the listener (issue 43), or the request is refused before its body is awaited.
      const host = new URL(admin.url).host;
      const body = await trickle(admin.url, `POST /consumers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user`);
      expect(body.text).toMatch(/^HTTP\/1\.1 408 /);
      const head = await trickle(admin.url, 'GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ');
      expect(head.text).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await admin.close();
    }
  });

  it('at its cap serves a newcomer and closes the connection idle the longest (issue 24)', async () => {
    const admin = await start({ maxConnections: 2 });
    const { host, hostname, port } = new URL(admin.url);
    const open: Socket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        open.push(await new Promise<Socket>((resolve) => {
          const s = connect(Number(port), hostname, () => resolve(s));
          s.resume();
        }));
      }
      const third = await new Promise<string>((resolve) => {
        const s = connect(Number(port), hostname, () => s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
        let text = '';
        s.on('data', (d) => (text += d.toString()));
        s.on('close', () => resolve(text));
        s.on('error', () => resolve(text));
      });
      expect(third).toMatch(/^HTTP\/1\.1 200 /);
      await until(() => open[0]!.closed, { what: 'the idlest connection closed' });
    } finally {
      for (const s of open) s.destroy();
      await admin.close();
    }
  });
});
