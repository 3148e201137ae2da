/**
 * A record's page buffers are reused from page to page (src/api/fhir/page-buffers.ts):
 * a buffer comes back only when released, and a page's bytes are released only
 * once the sink is done with them (for a record: once they are in the caller's
 * socket, test/api/record-writer.test.ts), so every page reaches the sink as the
 * server sent it, never a later page's bytes in its place.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ApiConfig } from '../../src/api/server/config.js';
import { createFhirClient } from '../../src/api/fhir/fhir-client.js';
import { PageBuffers, PagePool } from '../../src/api/fhir/page-buffers.js';
import { removeTempDirs } from '../helpers/tmp.js';
import { API_KEY, testPki } from './harness.js';
import { makeRecord, startFhirStandIn } from './stand-ins.js';

afterAll(() => removeTempDirs());

describe('PageBuffers', () => {
  let server: Server | null = null;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
    server = null;
  });

  const bodies: Buffer[] = [];

  /** The body of a GET to a real HTTP server that answers `body` in 1 KiB writes. */
  async function bodyOf(body: Buffer) {
    server ??= await new Promise<Server>((resolve) => {
      const s = createServer((req, res) => {
        const b = bodies[Number((req.url ?? '/').slice(1))] as Buffer;
        for (let i = 0; i < b.length; i += 1024) res.write(b.subarray(i, i + 1024));
        res.end();
      }).listen(0, '127.0.0.1', () => resolve(s));
    });
    bodies.push(body);
    const res = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/${bodies.length - 1}`);
    return res.body;
  }

  it('reads a body whole, across chunks and growth, and reuses a buffer only once it is released', async () => {
    const pool = new PageBuffers();
    const big = Buffer.from('a'.repeat(150_000));
    const first = await pool.read(await bodyOf(big), 1 << 20);
    expect(first.bytes.equals(big)).toBe(true);
    const second = await pool.read(await bodyOf(Buffer.from('b'.repeat(10))), 1 << 20);
    // not released: the second page got a buffer of its own, and the first page is intact
    expect(second.bytes.buffer).not.toBe(first.bytes.buffer);
    expect(first.bytes.equals(big)).toBe(true);
    first.release();
    first.release(); // idempotent: the buffer is handed out once
    const third = await pool.read(await bodyOf(Buffer.from('c'.repeat(20))), 1 << 20);
    const fourth = await pool.read(await bodyOf(Buffer.from('d'.repeat(20))), 1 << 20);
    expect(third.bytes.buffer).toBe(first.bytes.buffer);
    expect(fourth.bytes.buffer).not.toBe(first.bytes.buffer);
    expect([third.bytes.toString(), fourth.bytes.toString(), second.bytes.toString()]).toEqual(['c'.repeat(20), 'd'.repeat(20), 'b'.repeat(10)]);
  });

  it("hands a completed record's released buffers to the next record, and nothing of a record that did not complete", async () => {
    const pool = new PagePool();
    const first = new PageBuffers(pool);
    const a = await first.read(await bodyOf(Buffer.from('a'.repeat(5000))), 1 << 20);
    const held = await first.read(await bodyOf(Buffer.from('h'.repeat(5000))), 1 << 20);
    a.release();
    first.finish(); // `held` was never released: still the first record's
    const second = new PageBuffers(pool);
    const b = await second.read(await bodyOf(Buffer.from('b'.repeat(100))), 1 << 20);
    expect(b.bytes.buffer).toBe(a.bytes.buffer);
    const c = await second.read(await bodyOf(Buffer.from('c'.repeat(100))), 1 << 20);
    expect(c.bytes.buffer).not.toBe(held.bytes.buffer);
    expect(held.bytes.toString()).toBe('h'.repeat(5000));
    b.release(); // released, but the second record never completes (finish): nothing goes to the pool
    const third = new PageBuffers(pool);
    const d = await third.read(await bodyOf(Buffer.from('d'.repeat(100))), 1 << 20);
    expect([a.bytes.buffer, c.bytes.buffer]).not.toContain(d.bytes.buffer);
  });

  it('keeps no buffer larger than MAX_POOLED_BYTES for later records', async () => {
    const pool = new PagePool();
    const first = new PageBuffers(pool);
    const big = await first.read(await bodyOf(Buffer.alloc(PagePool.MAX_POOLED_BYTES + 1, 'x')), 1 << 23);
    big.release();
    first.finish();
    const next = await new PageBuffers(pool).read(await bodyOf(Buffer.from('y')), 1 << 23);
    expect(next.bytes.buffer).not.toBe(big.bytes.buffer);
  });

  it('refuses a body past its limit', async () => {
    const pool = new PageBuffers();
    await expect(pool.read(await bodyOf(Buffer.from('x'.repeat(5000))), 4096)).rejects.toThrow('larger than 4096');
  });
});

describe('the pages of one record', () => {
  it('stay intact while the sink holds them, though the next page is read meanwhile into reused buffers', { timeout: 30_000 }, async () => {
    // The sink awaits before it reads its bytes, as a write to a slow caller does: the next page is being
    // read all that time. Every page repeats an include, so most pages are re-joined and some are not.
    const { pki } = testPki();
    const record = makeRecord('p1', 400);
    const include = { fullUrl: 'http://hapi:8080/fhir/Practitioner/dr1', resource: { resourceType: 'Practitioner', id: 'dr1' }, search: { mode: 'include' } };
    const fhir = await startFhirStandIn({ tls: pki.server, apiKey: API_KEY, patients: {}, records: { p1: record }, maxPageSize: 20, repeatedInclude: include });
    const config = {
      fhirBaseUrl: new URL(fhir.url),
      fhirApiKey: API_KEY,
      fhirCa: readFileSync(pki.files.ca, 'utf8'),
      fhirTimeoutMs: 5_000,
      fhirPageSize: 20,
      identifierSystem: null,
      maxPages: 100,
      maxResources: 10_000,
      fhirMaxPageBytes: 1024 * 1024,
    } as ApiConfig;
    const client = createFhirClient(config);
    try {
      const pages: string[] = [];
      await client.everything(
        'p1',
        async (bytes) => {
          await sleep(5);
          pages.push(bytes.toString('utf8'));
        },
        { pages: 0, resources: 0 },
      );
      expect(JSON.parse(`[${pages.filter(Boolean).join(',')}]`)).toEqual([...record.slice(0, 20), include, ...record.slice(20)]);
    } finally {
      await client.close();
      await fhir.close();
    }
  });
});
