/**
 * Issue 14: Kong's own declarative tool, decK, against a running native
 * gateway (the real `hospital-api gateway` process): `sync` a file with
 * services, routes, plugins, consumers and every credential kind,
 * certificates, SNIs, CA certificates, upstreams and targets; `dump` gives it
 * back; `diff` after syncing the dump shows no change; `reset` empties it.
 *
 * Needs the `deck` binary (Debian: `apt-get install -y deck`, installed by
 * .ci/run). Works with the packaged 1.x CLI (`deck sync -s file`) and newer
 * ones (`deck gateway sync file`). Where deck is absent the test is skipped
 * with one plain line saying so.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { request } from 'undici';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { startGatewayChild, type GatewayChild } from './admin/child.js';

const probe = await execa('deck', ['version'], { reject: false, timeout: 30_000 }).catch(() => ({ exitCode: 127, stdout: '' }));
const hasDeck = probe.exitCode === 0;
if (!hasDeck) process.stdout.write('skipped: deck not installed\n');

/** decK ≥ 1.28 moved the commands under `deck gateway …`; the packaged 1.4 has them at the top. */
const modern = hasDeck && (await execa('deck', ['gateway', '--help'], { reject: false })).exitCode === 0;

interface Deck {
  run(verb: 'sync' | 'diff' | 'dump' | 'reset', file?: string): Promise<{ exitCode: number; stdout: string; stderr: string }>;
}

function deckFor(addr: string): Deck {
  return {
    async run(verb, file) {
      let args: string[];
      if (verb === 'dump') args = [...(modern ? ['gateway'] : []), 'dump', '-o', file as string];
      else if (verb === 'reset') args = [...(modern ? ['gateway'] : []), 'reset', '--force'];
      else args = modern ? ['gateway', verb, file as string] : [verb, '-s', file as string];
      if (verb === 'diff') args.push('--non-zero-exit-code');
      const res = await execa('deck', [...args, '--kong-addr', addr, '--no-color'], {
        reject: false,
        timeout: 120_000,
        env: { DECK_ANALYTICS: 'off', HOME: dir },
      });
      return { exitCode: res.exitCode ?? -1, stdout: String(res.stdout), stderr: String(res.stderr) };
    },
  };
}

let dir = '';
let gw: GatewayChild;

async function adminList(path: string): Promise<any[]> {
  const res = await request(`${gw.admin}${path}?size=1000`);
  const body = (await res.body.json()) as { data: any[] };
  return body.data;
}

describe.skipIf(!hasDeck)(`decK (${hasDeck ? probe.stdout.trim() : 'absent'}) against the native gateway`, () => {
  const ca = generateCa({ commonName: 'decK Test CA' });
  const leaf = issueCertificate(ca, { commonName: 'fhir.hospital.test', hosts: ['fhir.hospital.test'], usage: 'server' });
  let statePath = '';

  beforeAll(async () => {
    dir = tempDir('gw-deck-');
    statePath = join(dir, 'state.json');
    gw = await startGatewayChild(statePath);
  }, 60_000);
  afterAll(async () => {
    await gw?.kill();
    removeTempDirs();
  });

  it('syncs every entity kind, dumps it back, diffs clean after syncing the dump, and resets to empty', { timeout: 240_000 }, async () => {
    const deck = deckFor(gw.admin);
    const file = join(dir, 'kong.yaml');
    writeFileSync(
      file,
      stringify({
        _format_version: modern ? '3.0' : '1.1',
        services: [
          {
            name: 'fhir',
            host: 'fhir-pool',
            port: 8080,
            path: '/fhir',
            routes: [{ name: 'fhir-key', paths: ['/fhir-api-key-auth'], strip_path: true, plugins: [{ name: 'key-auth' }] }],
          },
        ],
        plugins: [{ name: 'rate-limiting', config: { minute: 100, policy: 'local' } }],
        consumers: [
          {
            username: 'platform',
            custom_id: 'platform-1',
            keyauth_credentials: [{ key: 'k-0123456789abcdef' }],
            basicauth_credentials: [{ username: 'platform', password: 'pw-Secret-1' }],
            hmacauth_credentials: [{ username: 'platform-hmac', secret: 'hmac-secret-1' }],
            jwt_secrets: [{ key: 'platform-iss', secret: 'jwt-secret-1', algorithm: 'HS256' }],
            oauth2_credentials: [{ name: 'platform-app', client_id: 'platform-client', client_secret: 'oauth-secret-1', redirect_uris: ['https://platform.test/cb'] }],
            acls: [{ group: 'readers' }],
          },
        ],
        certificates: [{ id: '6a8f2c1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b', cert: leaf.certPem, key: leaf.keyPem, snis: [{ name: 'fhir.hospital.test' }] }],
        ca_certificates: [{ id: '7b9f3d2f-4c5e-4f60-9bac-1d2e3f4a5b6c', cert: ca.certPem }],
        upstreams: [{ name: 'fhir-pool', targets: [{ target: '127.0.0.1:8081', weight: 100 }, { target: '127.0.0.2:8081', weight: 50 }] }],
      }),
    );

    const synced = await deck.run('sync', file);
    expect(synced.exitCode, synced.stderr).toBe(0);
    // 17 entities: 1 service, 1 route, 2 plugins, 1 consumer, 6 credentials, 1 certificate, 1 SNI, 1 CA, 1 upstream, 2 targets.
    expect(synced.stdout.match(/^creating /gm), synced.stdout).toHaveLength(17);
    expect(synced.stdout).toMatch(/Created: 17\s+Updated: 0\s+Deleted: 0/);

    // What the admin API now holds, as Kong would hold it.
    expect((await adminList('/services')).map((s) => [s.name, s.host, s.port, s.path])).toEqual([['fhir', 'fhir-pool', 8080, '/fhir']]);
    expect((await adminList('/routes')).map((r) => r.paths)).toEqual([['/fhir-api-key-auth']]);
    expect((await adminList('/plugins')).map((p) => p.name).sort()).toEqual(['key-auth', 'rate-limiting']);
    expect((await adminList('/key-auths')).map((k) => k.key)).toEqual(['k-0123456789abcdef']);
    expect((await adminList('/basic-auths')).map((k) => k.username)).toEqual(['platform']);
    expect((await adminList('/hmac-auths')).map((k) => k.secret)).toEqual(['hmac-secret-1']);
    expect((await adminList('/jwts')).map((k) => k.key)).toEqual(['platform-iss']);
    expect((await adminList('/oauth2')).map((k) => k.client_id)).toEqual(['platform-client']);
    expect((await adminList('/acls')).map((k) => k.group)).toEqual(['readers']);
    expect((await adminList('/certificates')).map((c) => c.snis)).toEqual([['fhir.hospital.test']]);
    expect((await adminList('/snis')).map((s) => s.name)).toEqual(['fhir.hospital.test']);
    expect((await adminList('/ca_certificates')).map((c) => c.id)).toEqual(['7b9f3d2f-4c5e-4f60-9bac-1d2e3f4a5b6c']);
    expect((await adminList('/upstreams/fhir-pool/targets')).map((t) => t.target).sort()).toEqual(['127.0.0.1:8081', '127.0.0.2:8081']);
    // ...in the state file, and in force on the proxy (key-auth answers before any upstream is tried).
    const state = JSON.parse(readFileSync(statePath, 'utf8')).config;
    expect([state.certificates.length, state.snis.length, state.upstreams.length, state.targets.length, state.jwt_secrets.length]).toEqual([1, 1, 1, 2, 1]);
    const unauth = await request(`${gw.proxy}/fhir-api-key-auth/metadata`);
    expect(unauth.statusCode).toBe(401);
    await unauth.body.dump();

    const dumpFile = join(dir, 'dump.yaml');
    const dumped = await deck.run('dump', dumpFile);
    expect(dumped.exitCode, dumped.stderr).toBe(0);
    const dump = parse(readFileSync(dumpFile, 'utf8'));
    expect(dump.services.map((s: any) => s.name)).toEqual(['fhir']);
    expect(dump.services[0].routes.map((r: any) => [r.name, r.plugins.map((p: any) => p.name)])).toEqual([['fhir-key', ['key-auth']]]);
    expect(dump.plugins.map((p: any) => [p.name, p.config.minute])).toEqual([['rate-limiting', 100]]);
    const consumer = dump.consumers[0];
    expect(consumer).toMatchObject({ username: 'platform', custom_id: 'platform-1' });
    expect(consumer.keyauth_credentials.map((k: any) => k.key)).toEqual(['k-0123456789abcdef']);
    expect(consumer.basicauth_credentials.map((k: any) => k.username)).toEqual(['platform']);
    expect(consumer.basicauth_credentials[0].password).not.toBe('pw-Secret-1'); // stored as a hash, never the password
    expect(consumer.hmacauth_credentials.map((k: any) => k.secret)).toEqual(['hmac-secret-1']);
    expect(consumer.jwt_secrets.map((k: any) => k.key)).toEqual(['platform-iss']);
    expect(consumer.oauth2_credentials.map((k: any) => k.client_id)).toEqual(['platform-client']);
    expect(consumer.acls.map((k: any) => k.group)).toEqual(['readers']);
    expect(dump.certificates.map((c: any) => [c.id, c.snis.map((s: any) => s.name)])).toEqual([['6a8f2c1e-3b4d-4e5f-8a9b-0c1d2e3f4a5b', ['fhir.hospital.test']]]);
    expect(dump.certificates[0].cert.trim()).toBe(leaf.certPem.trim());
    expect(dump.ca_certificates.map((c: any) => c.id)).toEqual(['7b9f3d2f-4c5e-4f60-9bac-1d2e3f4a5b6c']);
    expect(dump.upstreams.map((u: any) => [u.name, u.targets.map((t: any) => [t.target, t.weight])])).toEqual([
      ['fhir-pool', [['127.0.0.1:8081', 100], ['127.0.0.2:8081', 50]]],
    ]);

    const resynced = await deck.run('sync', dumpFile);
    expect(resynced.exitCode, resynced.stderr).toBe(0);
    const diff = await deck.run('diff', dumpFile);
    expect(diff.exitCode, `${diff.stdout}\n${diff.stderr}`).toBe(0);
    expect(diff.stdout).toMatch(/Created: 0\s+Updated: 0\s+Deleted: 0/);

    const reset = await deck.run('reset');
    expect(reset.exitCode, reset.stderr).toBe(0);
    for (const path of ['/services', '/routes', '/plugins', '/consumers', '/certificates', '/snis', '/ca_certificates', '/upstreams', '/key-auths', '/jwts']) {
      expect(await adminList(path), path).toEqual([]);
    }
    const after = JSON.parse(readFileSync(statePath, 'utf8')).config as Record<string, unknown[]>;
    expect(Object.entries(after).filter(([, list]) => list.length > 0)).toEqual([]);
    const emptyDump = join(dir, 'empty.yaml');
    expect((await deck.run('dump', emptyDump)).exitCode).toBe(0);
    expect(Object.keys(parse(readFileSync(emptyDump, 'utf8')))).toEqual(['_format_version']);
  });
});
