/**
 * Issue 12: a gateway whose state file is invalid keeps serving its last good
 * configuration, and `status` (table and --json) shows it degraded with the
 * reason, never "up"; `verify`'s components-up check fails on it. On a real
 * native stack through the real CLI, the state file edited by hand (as an
 * operator or a bad restore would) while the stack runs.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPaths } from '../../../src/install-dir/layout.js';
import { readEnvFile } from '../../../src/util/env-file.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { startNativeSite, type NativeSite } from '../../helpers/native-site.js';

let site: NativeSite;
let statePath = '';
let goodState = '';

beforeAll(async () => {
  site = await startNativeSite({ seed: 'degraded-gw', patients: 1, sizes: '5-10' });
  statePath = installPaths(site.dir).gatewayState;
  goodState = readFileSync(statePath, 'utf8');
});

afterAll(async () => {
  await site?.close();
  removeTempDirs();
});

/** Replaces the state file by rename, as an editor or a restore does. */
function replaceState(text: string): void {
  writeFileSync(`${statePath}.edit`, text, { mode: 0o600 });
  renameSync(`${statePath}.edit`, statePath);
}

interface StatusJson {
  allUp: boolean;
  degraded: Array<{ name: string; reason: string }>;
  components: Array<{ name: string; state: string; detail: string }>;
}

async function statusJson(): Promise<StatusJson> {
  const r = await site.cli(['status', '--json']);
  expect(r.code, r.err).toBe(0);
  return JSON.parse(r.out).result as StatusJson;
}

/** A platform-style request (HTTPS, the CA-checked gateway certificate) through the gateway's key-auth route. */
async function throughGateway(): Promise<number> {
  const paths = installPaths(site.dir);
  const key = readEnvFile(paths.apiEnv).FHIR_API_KEY!;
  const dispatcher = new Agent({ connect: { ca: readFileSync(paths.caCert, 'utf8'), servername: 'localhost', rejectUnauthorized: true } });
  try {
    const res = await request(`https://127.0.0.1:${site.ports.gatewayHttps}/fhir-api-key-auth/metadata`, { headers: { apikey: key, host: 'localhost' }, dispatcher });
    await res.body.dump();
    return res.statusCode;
  } finally {
    await dispatcher.close();
  }
}

describe('a degraded gateway (issue 12)', () => {
  it('is up while its state file is valid', async () => {
    const s = await statusJson();
    expect(s.components.find((c) => c.name === 'gateway')?.state).toBe('up');
    expect(s.allUp).toBe(true);
    expect(s.degraded).toEqual([]);
  });

  it('shows degraded with the reason in status and fails verify while the state file is invalid, then recovers', async () => {
    const doc = JSON.parse(goodState) as { config: { services: Array<Record<string, unknown>> } };
    expect(doc.config.services.length).toBeGreaterThan(0);
    doc.config.services[0]!.port = 'not-a-port';
    replaceState(JSON.stringify(doc, null, 1));

    const s = await statusJson();
    const gateway = s.components.find((c) => c.name === 'gateway')!;
    expect(gateway.state).toBe('degraded');
    expect(gateway.detail).toContain(statePath);
    expect(gateway.detail).toMatch(/port/);
    expect(s.allUp).toBe(false);
    expect(s.degraded).toEqual([{ name: 'gateway', reason: gateway.detail }]);
    // The other components are unaffected.
    expect(s.components.filter((c) => c.name !== 'gateway').map((c) => c.state)).toEqual(['up', 'up']);

    const table = await site.cli(['status']);
    expect(table.code, table.err).toBe(0);
    expect(table.out).toMatch(/^gateway\s+degraded\s/m);
    expect(table.out).toMatch(/gateway is degraded: Gateway state file .* is not valid/);

    // The last good configuration keeps serving meanwhile.
    expect(await throughGateway()).toBe(200);

    const verify = await site.cli(['verify', '--json']);
    expect(verify.code).not.toBe(0);
    const checks = JSON.parse(verify.out).result.record.checks as Array<{ id: string; status: string; summary: string }>;
    const up = checks.find((c) => c.id === 'components-up')!;
    expect(up.status).toBe('fail');
    expect(up.summary).toMatch(/^degraded: gateway \(Gateway state file/);

    // Put the good file back: up again, verify passes.
    replaceState(goodState);
    const after = await statusJson();
    expect(after.components.find((c) => c.name === 'gateway')?.state).toBe('up');
    expect(after.degraded).toEqual([]);
    const again = await site.cli(['verify', '--json']);
    expect(again.code, again.out).toBe(0);
  });
});
