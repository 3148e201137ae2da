/**
 * Kong's request id (kong.md §4, 3.5+): 32 hex characters. A random
 * per-process prefix plus a counter: unique, and no crypto call per request.
 */
import { randomBytes } from 'node:crypto';

const prefix = randomBytes(8).toString('hex');
let counter = randomBytes(4).readUInt32BE(0);

export function nextRequestId(): string {
  counter = (counter + 1) >>> 0;
  return prefix + counter.toString(16).padStart(16, '0');
}
