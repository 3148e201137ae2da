/**
 * Compose is chosen only when it works: v2 (`docker compose`), else
 * docker-compose 1.29+, else none. Run against the programs really installed
 * here (Debian's docker-compose 1.29 where the engine tier runs) and against
 * paths that hold no program.
 */
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPOSE_HTTP_TIMEOUT_S, dockerCli, findCompose, parseComposeVersion } from '../../../src/runtime/container/compose.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

describe('choosing Compose', () => {
  it('reads the versions both Composes print', () => {
    expect(parseComposeVersion('1.29.2')).toEqual([1, 29]);
    expect(parseComposeVersion('v2.24.5')).toEqual([2, 24]);
    expect(parseComposeVersion('2.29.1-desktop.1')).toEqual([2, 29]);
    expect(parseComposeVersion('docker: unknown command: docker compose')).toBeNull();
  });

  it('finds none when neither program exists (install then picks native)', async () => {
    expect(await findCompose('/nonexistent/docker', '/nonexistent/docker-compose')).toBeNull();
  });

  it('finds what this machine has: v2 first, else docker-compose 1.29+', async () => {
    const v2 = await execa('docker', ['compose', 'version', '--short'], { reject: false });
    const v1 = await execa('docker-compose', ['version', '--short'], { reject: false });
    const found = await findCompose();
    if (v2.exitCode === 0) expect(found?.argv).toEqual(['docker', 'compose']);
    else if (v1.exitCode === 0 && /^1\.(29|[3-9]\d)\./.test(String(v1.stdout).trim())) expect(found).toMatchObject({ argv: ['docker-compose'], major: 1 });
    else expect(found).toBeNull();
  });

  it("gives Compose COMPOSE_HTTP_TIMEOUT (docker-compose 1.29's wait for one engine answer), keeping an operator's value; docker gets none", async () => {
    const dir = tempDir('hapi-compose-env-');
    // a real program standing in for Compose: prints what it was given
    const bin = join(dir, 'fake-compose');
    writeFileSync(bin, '#!/bin/sh\necho "timeout=${COMPOSE_HTTP_TIMEOUT:-unset} args=$*"\n');
    chmodSync(bin, 0o755);
    const saved = process.env.COMPOSE_HTTP_TIMEOUT;
    try {
      delete process.env.COMPOSE_HTTP_TIMEOUT;
      const cli = dockerCli('p1', '/x/compose.yaml', { docker: bin, compose: [bin] });
      expect((await cli.compose(['down'])).stdout.trim()).toBe(`timeout=${COMPOSE_HTTP_TIMEOUT_S} args=-p p1 -f /x/compose.yaml down`);
      expect((await cli.run(['ps'])).stdout.trim()).toBe('timeout=unset args=ps');
      process.env.COMPOSE_HTTP_TIMEOUT = '42';
      expect((await cli.compose(['up'])).stdout.trim()).toBe('timeout=42 args=-p p1 -f /x/compose.yaml up');
    } finally {
      if (saved === undefined) delete process.env.COMPOSE_HTTP_TIMEOUT;
      else process.env.COMPOSE_HTTP_TIMEOUT = saved;
      removeTempDirs();
    }
  });
});
