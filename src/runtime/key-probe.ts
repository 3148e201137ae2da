/**
 * One request through the gateway's key-auth route with a given key, over
 * HTTPS verified against the install's CA (never turned off): what the
 * Hospital API would see with that key. Used by rotate-key and revoke-key, and
 * by the swarm runtime's key reload (swarm/key-reload.ts): it lives here, below
 * install and checks, so that a runtime may use it too.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import { endpoints, type InstallConfig } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';

export interface KeyProbe {
  status: number;
  /** True when the answer was a CapabilityStatement. */
  capability: boolean;
}

export async function probeKey(dir: string, config: InstallConfig, key: string): Promise<KeyProbe> {
  const ca = readFileSync(installPaths(dir).caCert, 'utf8');
  const agent = new Agent({ connect: { ca, rejectUnauthorized: true } });
  try {
    const res = await request(`${endpoints(config).keyAuthBase}/metadata`, {
      dispatcher: agent,
      headers: { apikey: key, accept: 'application/fhir+json' },
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    const text = await res.body.text();
    let capability = false;
    try {
      capability = (JSON.parse(text) as { resourceType?: unknown }).resourceType === 'CapabilityStatement';
    } catch {
      // not JSON
    }
    return { status: res.statusCode, capability };
  } finally {
    await agent.close();
  }
}
