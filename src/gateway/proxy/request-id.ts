/**
 * Kong's request id (3.5+, kong/observability/tracing/request_id.lua): 32 hex characters. A random
 * per-process prefix plus a counter: unique, and no crypto call per request.
 */
import { randomBytes } from 'node:crypto';

const prefix = randomBytes(8).toString('hex');
let counter = randomBytes(4).readUInt32BE(0);

export function nextRequestId(): string {
  counter = (counter + 1) >>> 0;
  return prefix + counter.toString(16).padStart(16, '0');
}
