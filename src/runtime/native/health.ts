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
