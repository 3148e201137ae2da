/**
 * Upstream requests in flight (dispatched, not yet complete or failed), over
 * the whole proxy and per caller of each service (issue 45): one consumer (or,
 * without one, one client address) may have at most `perCaller` requests to a
 * service at once, so it cannot hold every connection of the service's pool
 * (`upstreamConnectionsPerService`, upstream-pools.ts) and starve the others.
 * The nearest thing in nginx is limit_conn on a key; its answer past the limit
 * is a status of the operator's choice (503 by default). Here it is 429 with
 * Retry-After, as Kong's own limiting plugins answer, since the limit is the
 * caller's own (exchange.ts). A slot is held from dispatch until the call ends
 * or its client leaves (upstream-call.ts), whichever comes first.
 */
export class UpstreamSlots {
  private inFlight = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(public perCaller: number) {}

  /** Takes a slot for `key` (service and caller), or false when that caller has all of its own. */
  tryAcquire(key: string): boolean {
    const n = this.byCaller.get(key) ?? 0;
    if (n >= this.perCaller) return false;
    this.byCaller.set(key, n + 1);
    this.inFlight++;
    return true;
  }

  release(key: string): void {
    const n = (this.byCaller.get(key) ?? 1) - 1;
    if (n <= 0) this.byCaller.delete(key);
    else this.byCaller.set(key, n);
    this.inFlight--;
  }

  total(): number {
    return this.inFlight;
  }
}

/** The caller of a request, for its share of a service: the consumer when one was identified, else the client address. */
export function callerKey(serviceId: string, consumerId: string | null, clientIp: string): string {
  return consumerId !== null ? `${serviceId} c ${consumerId}` : `${serviceId} a ${clientIp}`;
}
