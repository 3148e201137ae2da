/**
 * Ids the server gives new resources: UUID version 7 (RFC 9562 §5.7, https://www.rfc-editor.org/rfc/rfc9562#section-5.7):
 * a 48-bit Unix time in milliseconds, then 74 random bits from the operating system's generator, in the usual
 * 8-4-4-4-12 hex form (an R4 id: datatypes.html#id). Ids made later sort after earlier ones (to the
 * millisecond), so a Bundle's new rows land at the end of the `resource (type, id)` index and of the
 * reference index's target ids instead of on a random page each: fewer pages written per commit (issue 28;
 * docs/fhir.md, Measurements). The time in the id is the one `meta.lastUpdated` already shows.
 */
import { randomFillSync } from 'node:crypto';

const bytes = Buffer.alloc(16);

export function newResourceId(now = Date.now()): string {
  randomFillSync(bytes, 6, 10);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70; // version 7
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // variant 10
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
