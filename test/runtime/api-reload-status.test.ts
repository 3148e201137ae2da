/** The API's reload answer as both runtimes read it: the right writer's status, every field it reports. */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReloadStatus } from '../../src/api/fhir/key-reload.js';
import { awaitReloadStatus } from '../../src/runtime/api-reload-status.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

function write(path: string, s: ReloadStatus): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(s));
  renameSync(`${path}.tmp`, path);
}

describe('awaitReloadStatus', () => {
  it("waits past another writer's status and a torn file, and keeps the CA fingerprint the API reports", async () => {
    const path = join(tempDir(), 'api-reload.json');
    write(path, { pid: 1, at: new Date().toISOString(), keyFingerprint: 'old', gateway: 'ok', caFingerprint: 'AA:BB' });
    const answer = awaitReloadStatus(path, (s) => s.pid === 42, 'the API (pid 42)');
    // the event that matters: the other writer's file is not taken; then the right one is
    setTimeout(() => writeFileSync(path, '{"pid":42,'), 120);
    setTimeout(() => write(path, { pid: 42, at: new Date().toISOString(), keyFingerprint: '0123456789abcdef', gateway: 'ok', caFingerprint: '12:34' }), 240);
    expect(await answer).toEqual({ keyFingerprint: '0123456789abcdef', gateway: 'ok', caFingerprint: '12:34' });
  });

  it('reports a null CA (the system store) and the error of a reload that kept the old key', async () => {
    const path = join(tempDir(), 'api-reload.json');
    write(path, { pid: 7, at: new Date().toISOString(), keyFingerprint: 'k', gateway: 'ERR_API_FHIR_TLS', error: 'ERR_CONFIG', caFingerprint: null });
    expect(await awaitReloadStatus(path, () => true, 'x')).toEqual({ keyFingerprint: 'k', gateway: 'ERR_API_FHIR_TLS', error: 'ERR_CONFIG', caFingerprint: null });
  });

  it('fails with ERR_KEY_RELOAD_FAILED naming who did not answer', async () => {
    const path = join(tempDir(), 'api-reload.json');
    await expect(awaitReloadStatus(path, () => true, 'the API container', 300)).rejects.toMatchObject({ code: 'ERR_KEY_RELOAD_FAILED', message: expect.stringContaining('no answer from the API container within 0.3s') });
  });
});
