/**
 * Test stand-in: an in-memory subset of Kong's admin API (kong/api/endpoints.lua) — the
 * calls install, consumer create and verify make — so provisioning logic is
 * tested on its own. `failAfter` makes a call throw, as a process killed
 * part-way would leave things. The end-to-end test uses the real gateway.
 */
import { randomUUID } from 'node:crypto';
import type { AdminResponse, Runtime } from '../../src/runtime/types.js';

type Row = Record<string, unknown> & { id: string };

export interface FakeKong {
  admin: Runtime['admin'];
  services: Row[];
  routes: Row[];
  plugins: Row[];
  consumers: Row[];
  keys: Row[];
  calls: string[];
  failAfter: number | null;
}

const ok = (status: number, body: unknown): AdminResponse => ({ status, body });
const notFound = (): AdminResponse => ok(404, { message: 'Not found' });

function parseUrl(url: string): { protocol: string; host: string; port: number; path: string | null } {
  const u = new URL(url);
  const protocol = u.protocol.replace(':', '');
  return { protocol, host: u.hostname, port: u.port ? Number(u.port) : protocol === 'https' ? 443 : 80, path: u.pathname === '/' ? null : u.pathname };
}

export function createFakeKong(): FakeKong {
  const k: FakeKong = { services: [], routes: [], plugins: [], consumers: [], keys: [], calls: [], failAfter: null, admin: async () => notFound() };
  const find = (rows: Row[], key: string, field = 'name'): Row | undefined => rows.find((r) => r.id === key || r[field] === key);
  const now = (): number => Math.floor(Date.now() / 1000);

  k.admin = async (method, fullPath, body) => {
    if (k.failAfter !== null && k.calls.length >= k.failAfter) throw new Error('killed part-way (test)');
    k.calls.push(`${method} ${fullPath}`);
    const path = fullPath.split('?')[0] as string;
    const b = (body ?? {}) as Record<string, unknown>;
    const seg = path.split('/').filter(Boolean).map(decodeURIComponent);
    const [a, x, c] = seg;
    if (seg.length === 1) {
      const rows = ({ services: k.services, routes: k.routes, plugins: k.plugins, consumers: k.consumers } as Record<string, Row[]>)[a as string];
      return rows ? ok(200, { data: rows, next: null }) : notFound();
    }
    if (a === 'services' && !c) {
      const row = find(k.services, x as string);
      if (method === 'GET') return row ? ok(200, row) : notFound();
      if (method === 'PUT') {
        const fields = parseUrl(String(b.url));
        if (row) Object.assign(row, fields, { updated_at: now() });
        else k.services.push({ id: randomUUID(), name: x, created_at: now(), updated_at: now(), ...fields });
        return ok(200, find(k.services, x as string));
      }
    }
    if (a === 'services' && c === 'plugins') {
      const svc = find(k.services, x as string);
      if (!svc) return notFound();
      if (method === 'GET') return ok(200, { data: k.plugins.filter((p) => (p.service as Row).id === svc.id), next: null });
      if (method === 'POST') {
        if (k.plugins.some((p) => p.name === b.name && (p.service as Row).id === svc.id)) return ok(409, { message: 'UNIQUE violation' });
        const row = { id: randomUUID(), name: b.name, service: { id: svc.id }, config: b.config, enabled: true };
        k.plugins.push(row);
        return ok(201, row);
      }
    }
    if (a === 'plugins' && method === 'PATCH') {
      const row = find(k.plugins, x as string, 'id');
      if (!row) return notFound();
      Object.assign(row, { config: { ...(row.config as object), ...(b.config as object) }, enabled: b.enabled ?? row.enabled });
      return ok(200, row);
    }
    if (a === 'routes') {
      const row = find(k.routes, x as string);
      if (method === 'GET') return row ? ok(200, row) : notFound();
      if (method === 'PUT') {
        if (row) Object.assign(row, b);
        else k.routes.push({ id: randomUUID(), name: x, ...b });
        return ok(200, find(k.routes, x as string));
      }
    }
    if (a === 'consumers' && x && !c) {
      let row = find(k.consumers, x, 'username');
      if (method === 'GET') return row ? ok(200, row) : notFound();
      if (method === 'PUT') {
        if (!row) k.consumers.push((row = { id: randomUUID(), username: x }));
        return ok(200, row);
      }
      if (method === 'DELETE') {
        if (!row) return notFound();
        const id = row.id;
        k.consumers = k.consumers.filter((r) => r.id !== id);
        k.keys = k.keys.filter((r) => (r.consumer as Row).id !== id); // credentials cascade
        return ok(204, null);
      }
    }
    if (a === 'consumers' && c === 'key-auth') {
      const consumer = find(k.consumers, x as string, 'username');
      if (!consumer) return notFound();
      if (method === 'GET') return ok(200, { data: k.keys.filter((r) => (r.consumer as Row).id === consumer.id), next: null });
      if (method === 'POST') {
        // Kong's kong/db/errors.lua: the 409 message names the duplicate value
        if (k.keys.some((r) => r.key === b.key)) return ok(409, { message: `UNIQUE violation detected on '{key="${String(b.key)}"}'` });
        const row = { id: randomUUID(), key: b.key, consumer: { id: consumer.id } };
        k.keys.push(row);
        return ok(201, row);
      }
    }
    return ok(405, { message: 'Method not allowed' });
  };
  return k;
}
