/**
 * The real CLI as a child process: ready line, SIGTERM closes cleanly, data survives a
 * restart, and kill -9 in the middle of a large transaction leaves nothing half-applied.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { search } from '../../../src/fhir/search/execute.js';
import { openFhirStore } from '../../../src/fhir/store/sqlite-store.js';
import { pragmaValue, queryValue } from '../../../src/fhir/store/sqlite.js';
import { runCli } from '../../helpers/cli.js';
import { startFhir } from '../../helpers/fhir-server.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { call, startServer } from './helpers.js';

afterAll(() => removeTempDirs());

/** user + system CPU seconds of a process, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const TAG = { system: 'urn:test:durability', code: 'big' };

describe('hospital-api fhir (CLI child)', () => {
  it('prints one ready line, stops cleanly on SIGTERM and keeps data across a restart', async () => {
    const dir = tempDir('fhir-cli-');
    const first = await startFhir(dir);
    const created = await call(first.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: 'urn:test', value: 'restart' }] });
    expect(created.status).toBe(201);
    expect(first.stderr().trim().split('\n').filter((l) => l.includes('listening on'))).toHaveLength(1);
    first.child.kill('SIGTERM');
    const result = await first.child;
    expect(result.exitCode).toBe(0);

    const second = await startFhir(dir);
    try {
      const read = await call(second.base, 'GET', `Patient/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body.meta.versionId).toBe('1');
      expect((await call(second.base, 'GET', 'Patient?identifier=urn:test|restart')).body.total).toBe(1);
    } finally {
      second.child.kill('SIGTERM');
      await second.child;
    }
  });

  it('refuses a port in use with ERR_PORT_IN_USE (exit 3) and a bad --port with exit 2', async () => {
    const busy = await startServer();
    try {
      const port = new URL(busy.url).port;
      const r = await runCli(['fhir', '--port', port, '--data', tempDir('fhir-busy-')]);
      expect(r.exitCode).toBe(3);
      expect(String(r.stderr)).toContain('ERR_PORT_IN_USE');
    } finally {
      await busy.close();
    }
    expect((await runCli(['fhir', '--port', '99999'])).exitCode).toBe(2);
  });

  it('kill -9 during a large transaction: committed data stays, the transaction is absent entirely', async () => {
    const dir = tempDir('fhir-kill-');
    const server = await startFhir(dir);
    const committed = await call(server.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'Committed' }] });
    expect(committed.status).toBe(201);
    const pid = committed.body.id as string;
    const N = 40_000;
    const entry = Array.from({ length: N }, (_, i) => ({
      resource: { resourceType: 'Observation', status: 'final', meta: { tag: [TAG] }, code: { text: `o${i}` }, subject: { reference: `Patient/${pid}` } },
      request: { method: 'POST', url: 'Observation' },
    }));
    entry.push({ resource: { resourceType: 'Patient', meta: { tag: [TAG] }, name: [{ family: 'Last' }] } as any, request: { method: 'POST', url: 'Patient' } });
    const body = JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry });
    const pending = request(`${server.base}`, { method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body }).then(
      async (r) => ({ status: r.statusCode, text: await r.body.text() }),
      (err: Error) => ({ status: 0, text: err.message }),
    );
    // parsing the body costs a fraction of a CPU-second, the writes several: kill once the
    // server has spent 0.5 CPU-second on this request (Linux /proc), so the kill lands mid-transaction
    const start = cpuSeconds(server.child.pid as number);
    while (cpuSeconds(server.child.pid as number) - start < 0.5) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGKILL');
    const outcome = await pending;
    await server.child;
    expect(outcome.status, 'the server answered before it was killed: the kill came too late to test anything').toBe(0);

    const store = openFhirStore(dir);
    try {
      expect(pragmaValue(store.db, 'integrity_check')).toBe('ok');
      expect(store.read('Patient', pid)?.deleted).toBe(false);
      const count = queryValue(store.db, "SELECT count(*) FROM resource WHERE type = 'Observation'");
      expect(count).toBe(0);
      expect(store.compartmentPage(pid, { limit: 10 }).resources.map((r) => r.resourceType)).toEqual(['Patient']);
      expect(search(store, { resourceType: 'Patient', params: [['_tag', `${TAG.system}|${TAG.code}`]] }).matches).toEqual([]);
    } finally {
      store.close();
    }
  });

  it('commits survive power loss by default (synchronous=FULL); NORMAL only by flag', async () => {
    const full = openFhirStore(tempDir('fhir-sync-'));
    const normal = openFhirStore(tempDir('fhir-sync-'), { synchronous: 'normal' });
    try {
      // https://www.sqlite.org/pragma.html#pragma_synchronous: 2 = FULL, 1 = NORMAL
      expect(pragmaValue(full.db, 'synchronous')).toBe(2);
      expect(pragmaValue(full.db, 'journal_mode')).toBe('wal');
      expect(pragmaValue(normal.db, 'synchronous')).toBe(1);
    } finally {
      full.close();
      normal.close();
    }
    const server = await startServer();
    try {
      expect(pragmaValue(server.store.db, 'synchronous')).toBe(2);
    } finally {
      await server.close();
    }
    const bad = await runCli(['fhir', '--synchronous', 'off', '--port', '0', '--data', tempDir('fhir-sync-')]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--synchronous must be full or normal');
  });
});
