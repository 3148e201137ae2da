/**
 * Install fetches what the docker runtime needs before it writes anything
 * (issue 27: a failed pull came after the whole directory was written), and
 * the error names the cause. Against the tier's real engine, which reaches no
 * registry: a pull fails as a site without network sees it; and against an
 * engine socket where none listens. No stack is started.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { installArgs } from '../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { engineAnswers, sayNoEngine } from './engine.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();
afterAll(() => removeTempDirs());


describe.skipIf(!engine)('docker install before it writes (issue 27)', () => {
  it('an image the engine cannot reach: ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE naming it, and no directory', async () => {
    const dir = join(tempDir('preflight-'), 'site');
    const r = await runCli([...installArgs({ runtime: 'docker', dir, host: '127.0.0.1', json: true }), '--postgres-image', 'registry.invalid/postgres:16']);
    expect(r.exitCode, String(r.stderr)).toBe(3);
    const error = JSON.parse(String(r.stdout)).error as { code: string; message: string };
    expect(error.code).toBe('ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE');
    expect(error.message).toContain('pull registry.invalid/postgres:16');
    expect(existsSync(dir)).toBe(false);
  }, 300_000);

  it('no engine at the socket: ERR_INSTALL_DOCKER_ENGINE_DOWN, and no directory', async () => {
    const dir = join(tempDir('preflight-'), 'site');
    const r = await runCli(installArgs({ runtime: 'docker', dir, host: '127.0.0.1', json: true }), { env: { DOCKER_HOST: `unix://${join(tempDir('no-engine-'), 'docker.sock')}` } });
    expect(r.exitCode, String(r.stderr)).toBe(3);
    expect((JSON.parse(String(r.stdout)).error as { code: string }).code).toBe('ERR_INSTALL_DOCKER_ENGINE_DOWN');
    expect(existsSync(dir)).toBe(false);
  }, 300_000);
});
