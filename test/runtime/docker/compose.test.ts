/**
 * Compose is chosen only when it works: v2 (`docker compose`), else
 * docker-compose 1.29+, else none. Run against the programs really installed
 * here (Debian's docker-compose 1.29 where the engine tier runs) and against
 * paths that hold no program.
 */
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { findCompose, parseComposeVersion } from '../../../src/runtime/docker/compose.js';

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
});
