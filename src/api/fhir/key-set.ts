/**
 * The de-duplication set of one record (issue 28): the keys of the entries
 * already sent (each a fullUrl's bytes), kept as bytes in one growing arena
 * with an open-addressing index, so the set is a handful of flat buffers
 * whatever the record's size, not one string and one hash-table entry per
 * resource on the garbage-collected heap (100,000 strings of ~100 bytes grew
 * serve's old generation by about 17 MiB, and the heap's headroom with it).
 *
 * Exact: a key is new unless the same bytes are already in the set. The hash
 * only places a key; two keys with the same hash are told apart by comparing
 * their bytes, so a collision costs a comparison, never a dropped resource.
 * The hash is seeded per set (FNV-1a, http://www.isthe.com/chongo/tech/comp/fnv/,
 * with a random offset basis): its collisions cannot be chosen in advance, and
 * a record holds at most MAX_RESOURCES keys.
 */
import { randomInt } from 'node:crypto';

const FNV_PRIME = 0x01000193;

export class KeySet {
  #arena = Buffer.allocUnsafe(16 * 1024);
  #used = 0;
  /** Key k is #arena[#start[k], #start[k] + #length[k]), its hash #hash[k]. */
  #start = new Uint32Array(256);
  #length = new Uint32Array(256);
  #hash = new Uint32Array(256);
  #size = 0;
  /** Slots (a power of two, at most half full): key index + 1, 0 when empty. */
  #slots = new Uint32Array(512);
  readonly #seed = randomInt(2 ** 32 - 1);

  get size(): number {
    return this.#size;
  }

  /** Adds the key `bytes[start, end)`. True when it was not in the set. */
  add(bytes: Uint8Array, start: number, end: number): boolean {
    let h = this.#seed;
    for (let i = start; i < end; i++) h = Math.imul(h ^ (bytes[i] as number), FNV_PRIME);
    h >>>= 0;
    const len = end - start;
    const mask = this.#slots.length - 1;
    let slot = h & mask;
    for (let k = this.#slots[slot] as number; k !== 0; k = this.#slots[slot] as number) {
      const at = k - 1;
      if (this.#hash[at] === h && this.#length[at] === len && this.#equal(at, bytes, start, len)) return false;
      slot = (slot + 1) & mask;
    }
    this.#insert(slot, h, bytes, start, len);
    return true;
  }

  /** Adds a key given as text (its UTF-8 bytes). True when it was not in the set. */
  addText(key: string): boolean {
    const bytes = Buffer.from(key, 'utf8');
    return this.add(bytes, 0, bytes.length);
  }

  #equal(at: number, bytes: Uint8Array, start: number, len: number): boolean {
    const from = this.#start[at] as number;
    const arena = this.#arena;
    for (let i = 0; i < len; i++) if (arena[from + i] !== bytes[start + i]) return false;
    return true;
  }

  #insert(slot: number, h: number, bytes: Uint8Array, start: number, len: number): void {
    if (this.#used + len > this.#arena.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.#arena.length, this.#used + len));
      this.#arena.copy(bigger, 0, 0, this.#used);
      this.#arena = bigger;
    }
    this.#arena.set(bytes.subarray(start, start + len), this.#used);
    const k = this.#size;
    if (k === this.#start.length) {
      this.#start = widen(this.#start);
      this.#length = widen(this.#length);
      this.#hash = widen(this.#hash);
    }
    this.#start[k] = this.#used;
    this.#length[k] = len;
    this.#hash[k] = h;
    this.#used += len;
    this.#size++;
    this.#slots[slot] = k + 1;
    if (2 * this.#size > this.#slots.length) this.#rehash();
  }

  #rehash(): void {
    const slots = new Uint32Array(2 * this.#slots.length);
    const mask = slots.length - 1;
    for (let k = 0; k < this.#size; k++) {
      let slot = (this.#hash[k] as number) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = k + 1;
    }
    this.#slots = slots;
  }
}

function widen(from: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> {
  const to = new Uint32Array(2 * from.length);
  to.set(from);
  return to;
}
