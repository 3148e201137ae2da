/**
 * Reading the compose project's state from `docker inspect`, replayed from
 * output recorded on a real engine (test/fixtures/docker/engine/, written by
 * test/docker-engine/stack.test.ts with HOSPITAL_API_RECORD_FIXTURES=1: Debian
 * docker.io 20.10, docker-compose 1.29, the full stack up).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { componentsFromInspect, publishedOf, serviceOf, stalePidJoins, versionsFromInspect, type ContainerInspect } from '../../../src/runtime/docker/parse.js';
import { splitReference } from '../../../src/runtime/container/image-reference.js';

const recorded = JSON.parse(readFileSync(new URL('../../fixtures/docker/engine/container-inspect.json', import.meta.url), 'utf8')) as ContainerInspect[];

describe('docker inspect, as a real engine printed it', () => {
  it('lists the seven long-running services Up; the migrations jobs are left out', () => {
    expect(recorded.map(serviceOf).sort()).toEqual(['hapi', 'hapi-database', 'hapi-pidns', 'hapi-watchdog', 'hospital-api', 'kong', 'kong-database', 'kong-migrations', 'kong-migrations-finish', 'kong-migrations-up']);
    const comps = componentsFromInspect(recorded);
    // recorded before the FHIR door (fhir-door) existed: a long-running service now, so it is listed, and down here
    expect(comps[0]).toMatchObject({ name: 'fhir-door', state: 'down' });
    expect(comps.slice(1).map((c) => [c.name, c.state])).toEqual([['hapi', 'up'], ['hapi-database', 'up'], ['hapi-pidns', 'up'], ['hapi-watchdog', 'up'], ['hospital-api', 'up'], ['kong', 'up'], ['kong-database', 'up']]);
    expect(comps.find((c) => c.name === 'kong')!.detail).toBe('running (healthy)');
    // status shows each container's host PID, image and version (issue 27: it showed '-')
    expect(comps.find((c) => c.name === 'kong')).toMatchObject({ pid: 4444, image: 'hospital-api-tier/kong', version: '3.9.3-standin-hapi-hung' });
    expect(comps.find((c) => c.name === 'hapi-database')).toMatchObject({ pid: 2159, image: 'hospital-api-tier/postgres', version: '15' });
  });

  it('reads published ports with their host address; the admin port is not among them', () => {
    const published = recorded.flatMap((c) => publishedOf(c).map((p) => `${serviceOf(c)} ${p}`));
    expect(published.length).toBe(3);
    for (const p of published) expect(p).toMatch(/^(hapi|hospital-api|kong) 127\.0\.0\.1:\d+$/);
    expect(published.join(' ')).not.toMatch(/:8001\b/);
  });

  it('marks a missing service down and an unhealthy or exited one not Up', () => {
    const kong = recorded.find((c) => serviceOf(c) === 'kong')!;
    const unhealthy = { ...kong, State: { ...kong.State, Health: { Status: 'unhealthy' } } };
    const starting = { ...kong, State: { ...kong.State, Health: { Status: 'starting' } } };
    const exited = { ...kong, State: { ...kong.State, Status: 'exited', Running: false, ExitCode: 1 } };
    const others = recorded.filter((c) => serviceOf(c) !== 'kong' && serviceOf(c) !== 'hapi');
    const state = (list: ContainerInspect[]) => Object.fromEntries(componentsFromInspect(list).map((c) => [c.name, `${c.state} ${c.detail}`]));
    expect(componentsFromInspect([exited]).find((c) => c.name === 'kong')!.pid).toBeUndefined();
    expect(state([...others, unhealthy])).toMatchObject({ kong: 'down running (unhealthy)', hapi: 'down no container (not created)' });
    expect(state([...others, starting]).kong).toBe('starting running (starting)');
    expect(state([...others, exited]).kong).toBe('exited exited (1)');
  });

  it('names image, tag and digest (or none, for a locally built image) for the record', () => {
    const versions = versionsFromInspect(recorded.filter((c) => c.State?.Running), []);
    expect(versions.map((v) => v.name)).toEqual(['hapi', 'hapi-database', 'hapi-pidns', 'hapi-watchdog', 'hospital-api', 'kong', 'kong-database']);
    for (const v of versions) expect(v.tag, v.name).not.toBe('latest');
    expect(splitReference('registry.example:5000/kong:3.9.3')).toEqual(['registry.example:5000/kong', '3.9.3']);
    const digest = 'sha256:' + 'a'.repeat(64);
    expect(splitReference(`kong:3.9.3@${digest}`)).toEqual(['kong', '3.9.3']);
    expect(splitReference(`kong@${digest}`)).toEqual(['kong', digest]);
  });

  it('reads the PID namespace joins as the engine printed them: hapi and hapi-watchdog on the current holder', () => {
    const holder = recorded.find((c) => serviceOf(c) === 'hapi-pidns')!;
    for (const name of ['hapi', 'hapi-watchdog']) expect(recorded.find((c) => serviceOf(c) === name)!.HostConfig?.PidMode, name).toBe(`container:${holder.Id}`);
    expect(stalePidJoins(recorded)).toEqual([]);
    // the holder recreated (a new id): both named
    expect(stalePidJoins(recorded.map((c) => (c === holder ? { ...c, Id: 'f'.repeat(64) } : c)))).toEqual(['hapi', 'hapi-watchdog']);
  });

  it('names the services that joined a PID namespace holder other than the current one (compose 1.29 leaves them so)', () => {
    const id = (c: string) => c.repeat(64);
    // HostConfig.PidMode as the engine printed it for a `pid: "service:…"` container: container:<the holder's id>
    const c = (service: string, Id: string, PidMode?: string, oneoff = false): ContainerInspect => ({
      Id, Image: 'sha256:x', Config: { Labels: { 'com.docker.compose.service': service, ...(oneoff ? { 'com.docker.compose.oneoff': 'True' } : {}) } }, HostConfig: PidMode === undefined ? {} : { PidMode },
    });
    const holder = c('hapi-pidns', id('a'), '');
    expect(stalePidJoins([holder, c('hapi', id('b'), `container:${id('a')}`), c('hapi-watchdog', id('c'), `container:${id('a')}`)])).toEqual([]);
    // the holder recreated: both still name the old one
    const recreated = c('hapi-pidns', id('d'), '');
    expect(stalePidJoins([recreated, c('hapi', id('b'), `container:${id('a')}`), c('hapi-watchdog', id('c'), `container:${id('a')}`)])).toEqual(['hapi', 'hapi-watchdog']);
    // one made before the holder existed (an older compose file): its own namespace
    expect(stalePidJoins([recreated, c('hapi', id('b'), ''), c('hapi-watchdog', id('c'), `container:${id('d')}`)])).toEqual(['hapi']);
    // no holder yet: nothing to join; one-off `run` containers are not the service's
    expect(stalePidJoins([c('hapi', id('b'), '')])).toEqual([]);
    expect(stalePidJoins([recreated, c('hapi', id('e'), '', true), c('hapi', id('b'), `container:${id('d')}`)])).toEqual([]);
    // other services are never named
    expect(stalePidJoins([recreated, c('kong', id('f'), '')])).toEqual([]);
  });
});
