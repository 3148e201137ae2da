/**
 * A failed docker command names its cause (issue 27: one hint for every
 * failure). The messages are those the Docker CLI and engine print, given by a
 * real program standing in for docker; test/docker-engine/preflight.test.ts
 * gets two of them from the real engine.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerCli } from '../../../src/runtime/container/compose.js';
import { dockerFailureCode } from '../../../src/runtime/container/failure.js';
import { isHospitalApiError } from '../../../src/errors/index.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(() => removeTempDirs());

const CASES: Array<[string, string]> = [
  ['Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?', 'ERR_INSTALL_DOCKER_ENGINE_DOWN'],
  ['permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock', 'ERR_INSTALL_DOCKER_ENGINE_DOWN'],
  ['Error response from daemon: driver failed programming external connectivity on endpoint h-kong-1: Bind for 127.0.0.1:8443 failed: port is already allocated', 'ERR_INSTALL_DOCKER_PORT_TAKEN'],
  ["Error response from daemon: pull access denied for nosuch/kong, repository does not exist or may require 'docker login': denied: requested access to the resource is denied", 'ERR_INSTALL_DOCKER_IMAGE_REFUSED'],
  ['Error response from daemon: manifest for kong:99 not found: manifest unknown: manifest unknown', 'ERR_INSTALL_DOCKER_IMAGE_REFUSED'],
  ['Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.2.3:53: no such host', 'ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE'],
  ['Error response from daemon: Get "https://registry.example/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)', 'ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE'],
  ['Error: something else entirely', 'ERR_INSTALL_DOCKER'],
];

describe('docker failures by cause', () => {
  it.each(CASES)('%s → %s', (stderr, code) => {
    expect(dockerFailureCode(stderr)).toBe(code);
  });

  it('a failing docker program gets the error for what it printed, with its last lines as the detail and a hint of its own', async () => {
    const dir = tempDir('docker-failure-');
    const bin = join(dir, 'docker');
    writeFileSync(bin, `#!/bin/sh\necho 'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host' >&2\nexit 1\n`);
    chmodSync(bin, 0o755);
    const err = await dockerCli('p', '/x/compose.yaml', { docker: bin, compose: [bin] }).run(['pull', 'kong:3.9']).catch((e: unknown) => e);
    expect(isHospitalApiError(err) && err.code).toBe('ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE');
    expect((err as Error).message).toContain('docker pull kong:3.9 failed');
    expect((err as Error).message).toContain('no such host');
    expect((err as { hint: string }).hint).toContain('docker load');
  });
});
