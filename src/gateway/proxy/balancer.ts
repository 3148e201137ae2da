/**
 * Upstreams and targets (kong/runloop/balancer/*.lua, lua-resty-healthcheck):
 * a service whose host names an upstream is balanced across that upstream's
 * targets by weighted round-robin (smooth, as nginx's; weight 0 = out), each
 * target with its own connection pool. Health is Kong's:
 * - passive: responses whose status is in healthchecks.passive.unhealthy.
 *   http_statuses count as http_failures, connection failures as
 *   tcp_failures, time-outs as timeouts; reaching a non-zero threshold takes
 *   the target out. A status in healthy.http_statuses counts a success (and,
 *   as in lua-resty-healthcheck, resets the failure counters).
 * - active: with healthchecks.active.{healthy,unhealthy}.interval > 0 the
 *   targets are probed (GET http_path); unhealthy targets come back after
 *   active.healthy.successes good probes, healthy ones go out after failures.
 *   As in Kong, passive checks alone never bring a target back: active probes
 *   do, and so does a new target entity (health is kept per target id).
 * No healthy target → 503 "failure to get a peer from the ring-balancer".
 * Health survives configuration changes of other entities (kept per target id).
 */
import type { Pool } from 'undici';
import { request } from 'undici';
import type { PassiveHealthcheck, Target, Upstream } from './entities.js';

export type FailureKind = 'tcp' | 'timeout';

interface Counters {
  healthy: boolean;
  successes: number;
  httpFailures: number;
  tcpFailures: number;
  timeouts: number;
}

export interface Peer {
  /** Target id (health is kept per id). */
  id: string;
  host: string;
  port: number;
  weight: number;
  /** Host header when the service does not preserve the client's (upstream.host_header, else the target's host). */
  hostHeader: string;
  pool: Pool;
  current: number;
  health: Counters;
}

const PASSIVE_DEFAULTS: PassiveHealthcheck = {
  healthy: { http_statuses: [200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308], successes: 0 },
  unhealthy: { http_statuses: [429, 500, 503], tcp_failures: 0, timeouts: 0, http_failures: 0 },
};

interface ActiveSettings {
  path: string;
  timeoutMs: number;
  healthyInterval: number;
  unhealthyInterval: number;
  healthyStatuses: Set<number>;
  successes: number;
  unhealthyStatuses: Set<number>;
  httpFailures: number;
  tcpFailures: number;
  timeouts: number;
}

/** Kong's target string: `host[:port]`, port 8000 by default (targets.lua), IPv6 in brackets. */
export function parseTarget(target: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(target) ?? /^([^:]+)(?::(\d+))?$/.exec(target);
  if (!m) throw new Error(`invalid target '${target}'`);
  return { host: m[1] as string, port: m[2] ? Number(m[2]) : 8000 };
}

function num(v: unknown, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

function activeSettings(u: Upstream): ActiveSettings | null {
  const a = (u.healthchecks?.active ?? {}) as Record<string, unknown> & {
    healthy?: Record<string, unknown>;
    unhealthy?: Record<string, unknown>;
  };
  const healthyInterval = num(a.healthy?.interval, 0);
  const unhealthyInterval = num(a.unhealthy?.interval, 0);
  if (healthyInterval <= 0 && unhealthyInterval <= 0) return null;
  const list = (v: unknown, d: number[]) => new Set(Array.isArray(v) ? (v as number[]) : d);
  return {
    path: typeof a.http_path === 'string' ? a.http_path : '/',
    timeoutMs: num(a.timeout, 1) * 1000,
    healthyInterval,
    unhealthyInterval,
    healthyStatuses: list(a.healthy?.http_statuses, [200, 302]),
    successes: num(a.healthy?.successes, 0),
    unhealthyStatuses: list(a.unhealthy?.http_statuses, [429, 404, 500, 501, 502, 503, 504, 505]),
    httpFailures: num(a.unhealthy?.http_failures, 0),
    tcpFailures: num(a.unhealthy?.tcp_failures, 0),
    timeouts: num(a.unhealthy?.timeouts, 0),
  };
}

/** Health counters per target id, kept across configuration versions. */
export class HealthRegistry {
  private readonly byId = new Map<string, Counters>();
  private used = new Set<string>();

  begin(): void {
    this.used = new Set();
  }

  get(id: string): Counters {
    this.used.add(id);
    let c = this.byId.get(id);
    if (!c) {
      c = { healthy: true, successes: 0, httpFailures: 0, tcpFailures: 0, timeouts: 0 };
      this.byId.set(id, c);
    }
    return c;
  }

  sweep(): void {
    for (const id of this.byId.keys()) if (!this.used.has(id)) this.byId.delete(id);
  }
}

/** A target changes state: every counter starts again from zero, whichever way it went. */
function setHealth(c: Counters, healthy: boolean): void {
  c.healthy = healthy;
  c.successes = 0;
  c.httpFailures = 0;
  c.tcpFailures = 0;
  c.timeouts = 0;
}

export class Balancer {
  private readonly passive: PassiveHealthcheck;
  private readonly passiveHealthy: Set<number>;
  private readonly passiveUnhealthy: Set<number>;
  private readonly active: ActiveSettings | null;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    readonly upstream: Upstream,
    readonly peers: Peer[],
    private readonly scheme: 'http' | 'https',
  ) {
    const p = upstream.healthchecks?.passive;
    this.passive = {
      healthy: { ...PASSIVE_DEFAULTS.healthy, ...(p?.healthy ?? {}) },
      unhealthy: { ...PASSIVE_DEFAULTS.unhealthy, ...(p?.unhealthy ?? {}) },
    };
    this.passiveHealthy = new Set(this.passive.healthy.http_statuses);
    this.passiveUnhealthy = new Set(this.passive.unhealthy.http_statuses);
    this.active = activeSettings(upstream);
  }

  /** Neither active probes nor passive thresholds are set: Kong reports such targets `healthchecks_off` (kong/runloop/balancer/healthcheckers.lua). */
  healthchecksOff(): boolean {
    const u = this.passive.unhealthy;
    return this.active === null && this.passive.healthy.successes <= 0 && u.tcp_failures <= 0 && u.timeouts <= 0 && u.http_failures <= 0;
  }

  /** Smooth weighted round-robin over healthy peers with weight > 0; `exclude` skips peers already tried. */
  pick(exclude: Peer | null = null): Peer | null {
    let total = 0;
    let best: Peer | null = null;
    for (const p of this.peers) {
      if (p.weight <= 0 || !p.health.healthy || p === exclude) continue;
      p.current += p.weight;
      total += p.weight;
      if (best === null || p.current > best.current) best = p;
    }
    if (best === null && exclude !== null && exclude.health.healthy && exclude.weight > 0) return exclude;
    if (best !== null) best.current -= total;
    return best;
  }

  /** Passive check: a response status from `peer`. */
  reportStatus(peer: Peer, status: number): void {
    const c = peer.health;
    const u = this.passive.unhealthy;
    if (this.passiveUnhealthy.has(status)) {
      if (u.http_failures > 0 && c.healthy) {
        c.successes = 0;
        if (++c.httpFailures >= u.http_failures) setHealth(c, false);
      }
    } else if (this.passiveHealthy.has(status)) {
      c.httpFailures = 0;
      c.tcpFailures = 0;
      c.timeouts = 0;
      const need = this.passive.healthy.successes;
      if (need > 0 && !c.healthy && ++c.successes >= need) setHealth(c, true);
    }
  }

  /** Passive check: a connection failure or time-out talking to `peer`. */
  reportFailure(peer: Peer, kind: FailureKind): void {
    const c = peer.health;
    if (!c.healthy) return;
    const u = this.passive.unhealthy;
    c.successes = 0;
    if (kind === 'tcp' && u.tcp_failures > 0 && ++c.tcpFailures >= u.tcp_failures) setHealth(c, false);
    if (kind === 'timeout' && u.timeouts > 0 && ++c.timeouts >= u.timeouts) setHealth(c, false);
  }

  /** Starts active probing, if the upstream asks for it. */
  start(): void {
    const a = this.active;
    if (a === null) return;
    if (a.unhealthyInterval > 0) this.timers.push(setInterval(() => this.probeAll(false), a.unhealthyInterval * 1000).unref());
    if (a.healthyInterval > 0) this.timers.push(setInterval(() => this.probeAll(true), a.healthyInterval * 1000).unref());
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  private probeAll(healthy: boolean): void {
    for (const p of this.peers) if (p.health.healthy === healthy) void this.probe(p);
  }

  private async probe(peer: Peer): Promise<void> {
    const a = this.active as ActiveSettings;
    const c = peer.health;
    let status = 0;
    let kind: FailureKind | null = null;
    try {
      const res = await request(`${this.scheme}://${peer.host.includes(':') ? `[${peer.host}]` : peer.host}:${peer.port}${a.path}`, {
        dispatcher: peer.pool,
        method: 'GET',
        headers: { host: peer.hostHeader },
        headersTimeout: a.timeoutMs,
        bodyTimeout: a.timeoutMs,
      });
      status = res.statusCode;
      await res.body.dump();
    } catch (err) {
      kind = /TIMEOUT/.test((err as { code?: string }).code ?? '') ? 'timeout' : 'tcp';
    }
    if (kind === null && a.healthyStatuses.has(status)) {
      c.httpFailures = 0;
      c.tcpFailures = 0;
      c.timeouts = 0;
      if (!c.healthy && a.successes > 0 && ++c.successes >= a.successes) setHealth(c, true);
      return;
    }
    if (!c.healthy) return;
    c.successes = 0;
    if (kind === 'tcp' && a.tcpFailures > 0 && ++c.tcpFailures >= a.tcpFailures) setHealth(c, false);
    else if (kind === 'timeout' && a.timeouts > 0 && ++c.timeouts >= a.timeouts) setHealth(c, false);
    else if (kind === null && a.unhealthyStatuses.has(status) && a.httpFailures > 0 && ++c.httpFailures >= a.httpFailures) setHealth(c, false);
  }
}

/** Targets of `upstream`: Kong keeps the newest entity per address; weight 0 entries stay listed but get no traffic. */
export function upstreamTargets(upstream: Upstream, targets: readonly Target[]): Target[] {
  const byAddress = new Map<string, Target>();
  for (const t of targets) {
    if (t.upstream?.id !== upstream.id) continue;
    const prev = byAddress.get(t.target);
    if (!prev || (t.created_at ?? 0) >= (prev.created_at ?? 0)) byAddress.set(t.target, t);
  }
  return [...byAddress.values()];
}
