/**
 * The second phase of a swarm start deploys only the services it changes (stack-changes.ts): checked on
 * the real template's two phases, without an engine. The swarm tier (test/swarm-engine/stack.test.ts,
 * `install --api-image`) checks on a real swarm that the API is updated once per start.
 */
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { renderStack, STACK_YAML, type StackInputs } from '../../../src/runtime/swarm/render.js';
import { SECRET_KEYS, type SecretPayloads } from '../../../src/runtime/swarm/secrets.js';
import { swarmSettings } from '../../../src/runtime/swarm/settings.js';
import { stackChanges } from '../../../src/runtime/swarm/stack-changes.js';
import { installConfig } from '../../helpers/install-config.js';
import { withDatabaseCa } from '../../helpers/database-ca.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const payloads = Object.fromEntries(SECRET_KEYS.map((k) => [k, `content-of-${k}`])) as unknown as SecretPayloads;
const dir = tempDir('hapi-swarm-changes-');
const config = installConfig({ runtime: 'swarm', ports: { api: 19000, fhir: 18080, gatewayHttps: 18443 }, swarm: swarmSettings(undefined, withDatabaseCa({ gatewayReplicas: '2', apiReplicas: '2' })) });

function render(inputs: Partial<StackInputs>): string {
  return renderStack(dir, config, { payloads, eligibleNodes: 3, ...inputs });
}

/** As index.ts's up(): step 1 with the migrations at one task and Kong and the API as they run now. */
function firstPhase(now: { kong: number; admin: number; api: number }): string {
  return render({ scale: { 'kong-migrations': 1, kong: now.kong, 'kong-admin': now.admin, 'hospital-api': now.api }, migrationsRun: '20261129T170000000Z-abc123' });
}

describe('the services the second phase of a start deploys', () => {
  it('a start over a running stack: only the migrations, so a service rolling since step 1 (a new API image) is not updated again', () => {
    const first = firstPhase({ kong: 2, admin: 1, api: 2 });
    const second = render({});
    const changes = stackChanges(first, second);
    expect(changes.services).toEqual(['kong-migrations']);
    // the part deployed is the full file's migrations with everything the file defines beside services
    const part = parse(changes.text, STACK_YAML) as Record<string, unknown> & { services: Record<string, unknown> };
    const full = parse(second, STACK_YAML) as Record<string, unknown> & { services: Record<string, unknown> };
    expect(part.services).toEqual({ 'kong-migrations': full.services['kong-migrations'] });
    for (const key of Object.keys(full).filter((k) => k !== 'services')) expect(part[key], key).toEqual(full[key]);
    // the migrations' replicas and run are what changed
    expect((part.services['kong-migrations'] as { deploy: { replicas: number } }).deploy.replicas).toBe(0);
  });

  it('a first start (nothing running): the migrations, the proxies, kong-admin and the API', () => {
    const changes = stackChanges(firstPhase({ kong: 0, admin: 0, api: 0 }), render({}));
    expect(changes.services).toEqual(['kong-migrations', 'kong', 'kong-admin', 'hospital-api']);
  });

  it('a new replica count for the API: the API is in the second phase too', () => {
    const changes = stackChanges(firstPhase({ kong: 2, admin: 1, api: 1 }), render({}));
    expect(changes.services).toEqual(['kong-migrations', 'hospital-api']);
  });

  it('a file the phase before did not have a service of: that service is deployed', () => {
    const second = render({});
    const before = parse(second, STACK_YAML) as { services: Record<string, unknown> };
    delete before.services.ops;
    const changes = stackChanges(JSON.stringify(before), second);
    expect(changes.services).toEqual(['ops']);
  });
});
