/** `GET /`, `GET /status` and `GET /plugins/enabled` (Kong's kong/api/routes/{kong,health,plugins}.lua). */
import { hostname } from 'node:os';
import { KONG_VERSION } from '../plugins/version.js';
import type { AdminRequest, AdminResponse } from './router.js';

function enabledInCluster(req: AdminRequest): string[] {
  return [...new Set(req.ctx.store.snapshot().config.plugins.map((p) => p.name))].sort();
}

export function rootInfo(req: AdminRequest): AdminResponse {
  const { ctx } = req;
  const available: Record<string, { version: string; priority: number }> = {};
  for (const [name, schema] of [...ctx.plugins].sort(([a], [b]) => a.localeCompare(b))) {
    available[name] = { version: schema.version, priority: schema.priority };
  }
  return {
    status: 200,
    body: {
      tagline: 'Welcome to kong',
      // decK and go-kong choose formats by this (e.g. 3.x regex paths, _format_version 3.0): the Kong release whose admin API this speaks.
      version: KONG_VERSION,
      // The toolkit's own release, in a field of its own.
      hospital_api_version: ctx.version,
      edition: 'community',
      hostname: ctx.nodeInfo?.hostname ?? hostname(),
      node_id: ctx.nodeId,
      timers: { running: 0, pending: 0 },
      plugins: { available_on_server: available, enabled_in_cluster: enabledInCluster(req) },
      lua_version: `hospital-api native gateway (Node.js ${process.version})`,
      // Our store is neither Postgres nor DB-less: CRUD and POST /config both work (docs/gateway-admin.md).
      configuration: { database: 'file', plugins: [...ctx.plugins.keys()].sort(), ...(ctx.nodeInfo?.configuration ?? {}) },
      pids: ctx.nodeInfo?.pids ?? { master: process.pid, workers: [] },
    },
  };
}

export function status(req: AdminRequest): AdminResponse {
  const { stats } = req.ctx;
  const mem = process.memoryUsage();
  const proxy = req.ctx.proxyHealth?.() as { appliedVersion?: number | null } | null | undefined;
  return {
    // A proxy with no configuration it could apply fails every route: not healthy (docs/gateway-proxy.md).
    status: proxy && proxy.appliedVersion === null ? 503 : 200,
    body: {
      memory: {
        workers_lua_vms: [{ pid: process.pid, http_allocated_gc: `${(mem.heapUsed / 1048576).toFixed(2)} MiB` }],
        lua_shared_dicts: {},
      },
      server: {
        total_requests: stats.totalRequests,
        connections_active: stats.connectionsActive,
        connections_accepted: stats.connectionsAccepted,
        connections_handled: stats.connectionsAccepted,
        connections_reading: 0,
        connections_writing: stats.connectionsActive > 0 ? 1 : 0,
        connections_waiting: Math.max(0, stats.connectionsActive - 1),
      },
      database: { reachable: true },
      configuration_version: req.ctx.store.snapshot().version,
      // Not Kong's: whether the proxy serves the newest configuration (docs/gateway-proxy.md).
      ...(req.ctx.proxyHealth ? { proxy: proxy ?? null } : {}),
    },
  };
}

export function pluginsEnabled(req: AdminRequest): AdminResponse {
  return { status: 200, body: { enabled_plugins: [...req.ctx.plugins.keys()].sort() } };
}
