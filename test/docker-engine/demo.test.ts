/**
 * Issue 27 on a real Docker engine: trying the production stack is one command.
 * `hospital-api demo --runtime docker` installs the docker stack, starts the
 * platform stand-in as a service of the demo project, loads synthetic
 * patients, creates the consumer, verifies (ACCEPTED) and fetches one record,
 * as `npm start` does for native.
 *
 * The same run covers two more of the points at no extra stack start:
 * - no --api-image: the API image is built from the repository's Dockerfile
 *   by the install itself, as a hospital's first install builds it (its
 *   NODE_IMAGE base is the tier's local Node image under the Dockerfile's
 *   default tag, as a hospital without a registry loads it);
 * - slow starts: Kong and HAPI stand-ins that take tens of seconds before they
 *   listen (a derived image sets STANDIN_START_DELAY_S), as the real HAPI does;
 *   the stack still installs and verifies, and no watchdog replaced anything.
 *
 * With the real images (HOSPITAL_API_DOCKER_E2E_IMAGES=real) it runs the
 * defaults: no image flag at all.
 */
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs } from '../helpers/tmp.js';
import { builtApiImage } from '../../src/runtime/container/images.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { VERSION } from '../../src/version.js';
import { freePorts } from '../../src/util/port-check.js';
import { docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { containersOf, formatTimings, prepareImages, purgeProjects, REAL, tierSite } from './site.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

/** Seconds the slow stand-ins wait before they listen: the real HAPI takes tens of seconds. */
const SLOW = { kong: 20, hapi: 40 } as const;
const SUFFIX = process.env.HOSPITAL_API_TIER_SUFFIX ? `-${process.env.HOSPITAL_API_TIER_SUFFIX}` : '';
const SLOW_IMAGES = { kong: `hospital-api-tier/kong:slow${SUFFIX}`, hapi: `hospital-api-tier/hapi:slow${SUFFIX}` } as const;
/** The Dockerfile's default NODE_IMAGE (ARG NODE_IMAGE=...): what the install's own build starts FROM. */
const DOCKERFILE_NODE_IMAGE = 'node:24-bookworm-slim';
const BUILT = builtApiImage(VERSION);

const { dir, project, timings, cli } = tierSite('hapi-docker-demo');
const taken = tierSite('hapi-docker-demo-taken');

async function slowVariant(tag: string, base: string, seconds: number): Promise<void> {
  await docker(['build', '-q', '-t', tag, '-'], { input: `FROM ${base}\nENV STANDIN_START_DELAY_S=${seconds}\n`, timeout: 600_000 });
}

describe.skipIf(!engine)('hospital-api demo --runtime docker (issue 27)', () => {
  beforeAll(async () => {
    const t0 = Date.now();
    await prepareImages();
    if (!REAL) {
      await slowVariant(SLOW_IMAGES.kong, TIER_IMAGES.kong, SLOW.kong);
      await slowVariant(SLOW_IMAGES.hapi, TIER_IMAGES.hapi, SLOW.hapi);
      await docker(['tag', TIER_IMAGES.node, DOCKERFILE_NODE_IMAGE]);
      // the install must build it, not find it
      await docker(['rmi', BUILT], { allowFail: true });
    }
    timings.images = Date.now() - t0;
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await purgeProjects([{ project, dir }, { project: taken.project, dir: taken.dir }]);
    if (!REAL) {
      // untagged only (their layers are the tier's own images); the slow variants stay, like the tier's
      // other images, so the next run on this engine finds them built (each is a full copy on vfs)
      for (const tag of [DOCKERFILE_NODE_IMAGE, BUILT]) await docker(['rmi', tag], { allowFail: true });
    }
    process.stdout.write(`docker demo timings (s): ${formatTimings(timings)}\n`);
    removeTempDirs();
  }, 600_000);

  it('a port another program holds: refused before any container starts, naming the port, its service and its flag (issue 48)', async () => {
    const [apiPort, fhirPort, httpsPort] = (await freePorts(3)) as [number, number, number];
    const holder = createServer().listen(httpsPort, '127.0.0.1');
    await once(holder, 'listening');
    try {
      const ports = ['--api-port', String(apiPort), '--fhir-port', String(fhirPort), '--gateway-https-port', String(httpsPort)];
      const images = REAL ? [] : ['--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres];
      const r = await taken.cli(['demo', '--runtime', 'docker', '--patients', '1', '--sizes', '10-20', ...ports, ...images, '--json']);
      expect(r.code, `${r.out}\n${r.err}`).toBe(3);
      const error = JSON.parse(r.out).error as { code: string; message: string };
      expect(error.code).toBe('ERR_INSTALL_DOCKER_PORT_TAKEN');
      expect(error.message).toContain(`127.0.0.1:${httpsPort}, which kong publishes (--gateway-https-port), is in use`);
      // nothing of the project was started, so nothing is left running
      expect(await containersOf(taken.project)).toEqual([]);
    } finally {
      holder.close();
    }
  }, 600_000);

  it('one command: installs the docker stack, loads patients, verifies ACCEPTED and returns a record', async () => {
    const [apiPort, fhirPort, httpsPort] = (await freePorts(3)) as [number, number, number];
    const ports = ['--api-port', String(apiPort), '--fhir-port', String(fhirPort), '--gateway-https-port', String(httpsPort)];
    const images = REAL ? [] : ['--kong-image', SLOW_IMAGES.kong, '--hapi-image', SLOW_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres];
    const r = await cli(['demo', '--runtime', 'docker', '--patients', '2', '--sizes', '10-40', ...ports, ...images, '--json']);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    const result = JSON.parse(r.out).result as { record: string; fresh: boolean; patient: { careId: string; resources: number }; curl: string };
    expect(result.fresh).toBe(true);
    expect(existsSync(result.record)).toBe(true);
    expect(result.patient.resources).toBeGreaterThan(1);
    expect(result.curl).toContain('/api/patients');

    const all = await containersOf(project);
    type Inspected = ContainerInspect & { Config?: { User?: string; Env?: string[] } };
    const service = (name: string): Inspected => {
      const c = all.find((x) => x.Config?.Labels?.['com.docker.compose.service'] === name);
      if (!c) throw new Error(`no ${name} container`);
      return c;
    };
    // the platform stand-in is a service of the demo project: running, never root, publishing nothing
    const platform = service('platform');
    expect(platform.State?.Running).toBe(true);
    expect(platform.Config?.User?.split(':')[0]).not.toBe('0');
    expect(Object.values(platform.NetworkSettings?.Ports ?? {}).flatMap((b) => b ?? [])).toEqual([]);
    // the API runs the image the install built from the Dockerfile
    const api = service('hospital-api');
    expect(api.Config?.Image).toBe(BUILT);
    expect((await docker(['image', 'inspect', '--format', '{{.Id}}', BUILT])).out.trim()).toBe(api.Image);
    if (!REAL) {
      // the slow variants ran, and neither was replaced by its watchdog or its healthcheck
      for (const [name, seconds] of [['kong', SLOW.kong], ['hapi', SLOW.hapi]] as const) {
        const c = service(name);
        expect(c.Config?.Env).toContain(`STANDIN_START_DELAY_S=${seconds}`);
        expect(c.RestartCount ?? 0).toBe(0);
        expect(c.State?.Running).toBe(true);
      }
    }
    // what a hospital trying it reads next: status names every container, the stand-in with them
    const status = await cli(['status', '--json']);
    expect(status.code, status.err).toBe(0);
    const names = (JSON.parse(status.out).result.components as Array<{ name: string; state: string }>).map((c) => `${c.name} ${c.state}`);
    expect(names).toContain('platform up');
    expect(names).toContain('hapi up');
  }, 1_800_000);
});
