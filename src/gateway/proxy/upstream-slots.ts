/**
 * The upstream requests in flight (dispatched, not yet complete or failed),
 * over the whole proxy (issue 45): what a cancelled downstream request must
 * give back, and what the status side can show.
 */
export class UpstreamSlots {
  private inFlight = 0;

  acquire(): void {
    this.inFlight++;
  }

  release(): void {
    this.inFlight--;
  }

  total(): number {
    return this.inFlight;
  }
}
