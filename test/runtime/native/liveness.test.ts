/**
 * Issue 24, "Busy is not dead": the watchdog's probe tells a component whose
 * connection cap is full of requests in progress (it closes the probe's
 * connection itself: its event loop runs) and one that answers late from one
 * that is stopped (SIGSTOP: the kernel accepts, nothing ever answers).
 */
import { spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { liveness } from '../../../src/runtime/native/health.js';
import { guardSockets } from '../../../src/util/socket-guard.js';
import { until } from '../../helpers/until.js';

const LIMITS = { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, handshakeTimeoutMs: 5_000, idleTimeoutMs: 5_000, maxConnections: 2 };

describe('watchdog liveness probe', () => {
  it('calls a component busy, not silent, when every connection of its full cap has a request in progress', async () => {
    const pending: ServerResponse[] = [];
    const server = createServer((req, res) => {
      if (req.url === '/work') pending.push(res);
      else res.end('ok');
    });
    guardSockets(server, LIMITS);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const work = [0, 1].map(() => fetch(`${url}/work`).then((r) => r.text()));
    try {
      await until(() => pending.length === 2, { what: 'two requests in progress' });
      expect(await liveness(`${url}/health`, 5_000)).toBe('busy');
      for (const res of pending) res.end('done');
      await Promise.all(work);
      expect(await liveness(`${url}/health`, 5_000)).toBe('answered');
    } finally {
      for (const res of pending) res.end();
      server.closeAllConnections();
      server.close();
    }
  });

  it('waits for a component that answers late instead of calling it dead', async () => {
    let release: (() => void) | null = null;
    const server = createServer((_req, res) => {
      release = () => res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`;
    try {
      const seen = liveness(url, 10_000);
      // The server holds the request until the test releases it; the probe keeps waiting within its window.
      await until(() => release !== null, { what: 'the request held' });
      release!();
      expect(await seen).toBe('answered');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('calls a stopped process (SIGSTOP) silent', async () => {
    const child = spawn(process.execPath, ['-e', "require('http').createServer((q,s)=>s.end('ok')).listen(0,'127.0.0.1',function(){process.stdout.write(this.address().port+'\\n')})"], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const port = await until(() => (out.includes('\n') ? Number(out.trim()) : null), { what: 'the child listening' });
      const url = `http://127.0.0.1:${port}/health`;
      expect(await liveness(url, 2_000)).toBe('answered');
      child.kill('SIGSTOP');
      expect(await liveness(url, 500)).toBe('silent');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
