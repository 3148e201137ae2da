/** Health probes over loopback HTTP (undici), with short time-outs. */
import { request } from 'undici';
import { isPortFree } from '../../util/port-check.js';
import { HospitalApiError } from '../../errors/index.js';
import type { ComponentSpec } from './components.js';

/** True when the URL answers 200 within `timeoutMs`. */
export async function probe(url: string, timeoutMs = 1500): Promise<boolean> {
  try {
    const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

/**
 * What a probe tells the watchdog (issue 24, "busy is not dead"):
 * - `answered`: 200;
 * - `failing`: it answered something else (the watchdog treats it as before:
 *   not healthy, replaced after the hung window);
 * - `busy`: it closed the connection itself without an answer (a listener
 *   whose cap is full of requests in progress refuses the newcomer that way,
 *   src/util/socket-guard.ts): its event loop runs, so it is not hung;
 * - `silent`: no answer within `timeoutMs` (a stopped or wedged process: the
 *   kernel still accepts the connection, nothing reads it), or nothing listens.
 */
export type Liveness = 'answered' | 'failing' | 'busy' | 'silent';

const PEER_CLOSED = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

export async function liveness(url: string, timeoutMs: number): Promise<Liveness> {
  try {
    const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    await res.body.dump();
    return res.statusCode === 200 ? 'answered' : 'failing';
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    return PEER_CLOSED.has(code) ? 'busy' : 'silent';
  }
}

/** A component's health as `status` and `verify` show it: null when its health URL does not answer 200. */
export interface ComponentHealth {
  state: 'up' | 'degraded';
  detail: string;
}

const MAX_HEALTH_BODY = 1 << 20;

/**
 * Probes the spec's health URL and, for a component that reports more than
 * "answering" (the gateway: ComponentSpec.degradation), reads its answer to
 * tell up from degraded.
 */
export async function componentHealth(spec: Pick<ComponentSpec, 'healthUrl' | 'degradation'>, timeoutMs = 1500): Promise<ComponentHealth | null> {
  let body: unknown = null;
  try {
    const res = await request(spec.healthUrl, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    if (res.statusCode !== 200 || !spec.degradation) {
      await res.body.dump();
      if (res.statusCode !== 200) return null;
    } else {
      const text = await res.body.text();
      if (text.length <= MAX_HEALTH_BODY) {
        try { body = JSON.parse(text); } catch { body = null; }
      }
    }
  } catch {
    return null;
  }
  const reason = spec.degradation?.(body) ?? null;
  return reason ? { state: 'degraded', detail: `degraded: ${reason}` } : { state: 'up', detail: `answering ${spec.healthUrl}` };
}


/**
 * Throws ERR_RUNTIME_PORT_TAKEN naming the first port of these components that
 * something else holds.
 */
export async function assertPortsFree(specs: ComponentSpec[]): Promise<void> {
  for (const spec of specs) {
    if (spec.blocked) continue;
    for (const { host, port } of spec.ports) {
      if (!(await isPortFree(port, host))) {
        throw new HospitalApiError('ERR_RUNTIME_PORT_TAKEN', { port, host, component: spec.name });
      }
    }
  }
}
