/**
 * Callers outside src/runtime/ ask whether "the API" or "the gateway" runs; each
 * runtime reports its components by its own names (docker: compose services).
 * `cert renew --renew-ca` on docker once asked for `api` and, finding no such
 * component, never made the running API container trust the new CA.
 */
import { describe, expect, it } from 'vitest';
import { componentNameOf, roleIsUp } from '../../src/runtime/component-role.js';
import type { ComponentState } from '../../src/runtime/types.js';

const running = (name: 'native' | 'docker', components: Array<Pick<ComponentState, 'name' | 'state'>>) => ({
  name,
  components: async () => components as ComponentState[],
});

describe('component roles', () => {
  it('names each role as the runtime reports it', () => {
    expect(['api', 'gateway', 'fhir'].map((r) => componentNameOf({ name: 'docker' }, r as 'api'))).toEqual(['hospital-api', 'kong', 'hapi']);
    expect(['api', 'gateway', 'fhir'].map((r) => componentNameOf({ name: 'native' }, r as 'api'))).toEqual(['api', 'gateway', 'fhir']);
  });

  it('finds the docker API container up by its service name, and only when up or degraded', async () => {
    expect(await roleIsUp(running('docker', [{ name: 'hospital-api', state: 'up' }]), 'api')).toBe(true);
    expect(await roleIsUp(running('docker', [{ name: 'hospital-api', state: 'degraded' }]), 'api')).toBe(true);
    expect(await roleIsUp(running('docker', [{ name: 'hospital-api', state: 'down' }]), 'api')).toBe(false);
    expect(await roleIsUp(running('docker', [{ name: 'api', state: 'up' }]), 'api')).toBe(false);
    expect(await roleIsUp(running('native', [{ name: 'api', state: 'up' }, { name: 'gateway', state: 'starting' }]), 'gateway')).toBe(false);
  });
});
