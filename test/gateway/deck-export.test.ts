/**
 * Issue 26: `hospital-api gateway export` as decK reads it. The real
 * `hospital-api gateway` process on ephemeral loopback ports, provisioned as
 * `hospital-api install` provisions it (src/install/provision.ts: basic-auth,
 * cors and key-auth on the two FHIR services) plus a consumer with a key-auth
 * and a basic-auth credential; then a fresh export must pass the installed
 * `deck validate` (rc 0) and `deck diff` against that same gateway (0/0/0),
 * validate against the current decK release's schema, and reload through our
 * own `POST /config` unchanged, the basic-auth password still verifying on the
 * proxy. A disabled service, which decK 1.4.0 cannot express, is refused with
 * a coded error; `--format kong` writes Kong's own form instead.
 *
 * Needs the `deck` binary (Debian's 1.4.0, installed by .ci/run); where it is
 * absent the test is skipped with one plain line saying so.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import AjvDraft04Module from 'ajv-draft-04';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { provisionGateway } from '../../src/install/provision.js';
import type { AdminResponse } from '../../src/runtime/types.js';
import { runCli } from '../helpers/cli.js';
import { makeNativeInstall } from '../helpers/native-install.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { startGatewayChild, type GatewayChild } from './admin/child.js';

const probe = await execa('deck', ['version'], { reject: false, timeout: 30_000 }).catch(() => ({ exitCode: 127, stdout: '' }));
const hasDeck = probe.exitCode === 0;
if (!hasDeck) process.stdout.write('skipped: deck not installed\n');
/** decK ≥ 1.28 moved the commands under `deck gateway …` / `deck file …`; the packaged 1.4 has them at the top. */
const modern = hasDeck && (await execa('deck', ['gateway', '--help'], { reject: false })).exitCode === 0;

const AjvDraft04 = (AjvDraft04Module as unknown as { default?: typeof AjvDraft04Module.default }).default ?? AjvDraft04Module.default;
const currentSchema = JSON.parse(readFileSync(new URL('../fixtures/schemas/kong-declarative-config.json', import.meta.url), 'utf8'));
const validateCurrent = new AjvDraft04({ allErrors: true, strict: false }).compile(currentSchema);

let dir = '';
let gw: GatewayChild;
let proxySsl = '';
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function deck(verb: 'validate' | 'diff', file: string): Promise<{ exitCode: number; out: string }> {
  let args: string[];
  if (verb === 'validate') args = modern ? ['file', 'validate', file] : ['validate', '-s', file];
  else args = [...(modern ? ['gateway', 'diff', file] : ['diff', '-s', file]), '--non-zero-exit-code', '--kong-addr', gw.admin];
  const res = await execa('deck', [...args, '--no-color'], { reject: false, timeout: 120_000, env: { DECK_ANALYTICS: 'off', HOME: dir } });
  return { exitCode: res.exitCode ?? -1, out: `${String(res.stdout)}\n${String(res.stderr)}` };
}

async function admin(method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<AdminResponse> {
  const res = await request(`${gw.admin}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

async function proxyStatus(path: string, auth?: string): Promise<number> {
  // The provisioned routes are https-only (426 on plain HTTP), so this goes to the HTTPS listener.
  const headers: Record<string, string> = auth ? { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } : {};
  const res = await request(`${proxySsl}${path}`, { headers, dispatcher: insecure });
  await res.body.dump();
  return res.statusCode;
}

const strip = (c: unknown): unknown => JSON.parse(JSON.stringify(c, (k, v) => (k === 'created_at' || k === 'updated_at' ? undefined : v)));

describe.skipIf(!hasDeck)(`gateway export read by decK (${hasDeck ? probe.stdout.trim() : 'absent'})`, () => {
  let statePath = '';

  beforeAll(async () => {
    dir = tempDir('gw-deck-export-');
    statePath = join(dir, 'state.json');
    const ca = generateCa({ commonName: 'decK export Test CA' });
    const leaf = issueCertificate(ca, { commonName: 'localhost', hosts: ['localhost', '127.0.0.1'], usage: 'server' });
    writeFileSync(join(dir, 'tls.crt'), leaf.certPem);
    writeFileSync(join(dir, 'tls.key'), leaf.keyPem, { mode: 0o600 });
    gw = await startGatewayChild(statePath, ['--proxy-ssl-listen', '127.0.0.1:0', '--cert', join(dir, 'tls.crt'), '--key', join(dir, 'tls.key')]);
    proxySsl = `https://${/proxy-ssl=(\S+)/.exec(gw.stderr())?.[1] ?? 'missing'}`;
  }, 60_000);
  afterAll(async () => {
    await gw?.kill();
    await insecure.close();
    removeTempDirs();
  });

  it('validates and diffs 0/0/0 against the gateway it came from, and reloads through POST /config unchanged', { timeout: 240_000 }, async () => {
    const config = await makeNativeInstall(tempDir('gw-deck-install-'));
    const steps = await provisionGateway(admin, config);
    expect(steps.filter((s) => s.kind === 'plugin').map((s) => s.name)).toEqual(['fhir-api/basic-auth', 'fhir-api/cors', 'fhir-api/request-size-limiting', 'fhir-api-key-auth/key-auth', 'fhir-api-key-auth/request-size-limiting', 'prometheus']);
    expect((await admin('POST', '/consumers', { username: 'platform', custom_id: 'platform-1' })).status).toBe(201);
    expect((await admin('POST', '/consumers/platform/key-auth', { key: 'k-0123456789abcdef0123' })).status).toBe(201);
    expect((await admin('POST', '/consumers/platform/basic-auth', { username: 'platform', password: 'pw-Secret-1' })).status).toBe(201);
    const rightPassword = await proxyStatus('/fhir-api/metadata', 'platform:pw-Secret-1');
    expect(rightPassword, 'authenticated; the FHIR upstream is not running').toBeGreaterThanOrEqual(502);
    expect(await proxyStatus('/fhir-api/metadata', 'platform:wrong')).toBe(401);

    const file = join(dir, 'export.yaml');
    const exported = await runCli(['gateway', 'export', '--state', statePath, '--output', file]);
    expect(exported.exitCode, String(exported.stderr)).toBe(0);
    const doc = parse(readFileSync(file, 'utf8'));
    expect(doc.consumers[0].keyauth_credentials).toHaveLength(1);
    expect(doc.consumers[0].basicauth_credentials[0].password).toMatch(/^scrypt\$/);
    expect(validateCurrent(doc), JSON.stringify(validateCurrent.errors)).toBe(true);

    const validated = await deck('validate', file);
    expect(validated.exitCode, validated.out).toBe(0);
    const diff = await deck('diff', file);
    expect(diff.exitCode, diff.out).toBe(0);
    expect(diff.out).toMatch(/Created: 0\s+Updated: 0\s+Deleted: 0/);

    // Our own import of our own export: the same entities, the same password hash.
    const before = JSON.parse(readFileSync(statePath, 'utf8')).config;
    const loaded = await request(`${gw.admin}/config`, { method: 'POST', headers: { 'content-type': 'application/yaml' }, body: readFileSync(file) });
    expect(loaded.statusCode, await loaded.body.text()).toBe(201);
    expect(strip(JSON.parse(readFileSync(statePath, 'utf8')).config)).toEqual(strip(before));
    expect(await proxyStatus('/fhir-api/metadata', 'platform:pw-Secret-1')).toBe(rightPassword);
    expect(await proxyStatus('/fhir-api/metadata', 'platform:wrong')).toBe(401);
    const again = await deck('diff', file);
    expect(again.out).toMatch(/Created: 0\s+Updated: 0\s+Deleted: 0/);
  });

  it('refuses a disabled service with ERR_GATEWAY_EXPORT_DISABLED_SERVICE; --format kong keeps enabled: false', { timeout: 120_000 }, async () => {
    expect((await admin('PATCH', '/services/fhir-api', { enabled: false })).status).toBe(200);
    const file = join(dir, 'disabled.yaml');
    const refused = await runCli(['gateway', 'export', '--state', statePath, '--output', file]);
    expect(refused.exitCode).toBe(1);
    expect(String(refused.stderr)).toContain('ERR_GATEWAY_EXPORT_DISABLED_SERVICE');
    expect(String(refused.stderr)).toContain('fhir-api');
    expect(String(refused.stderr)).toContain('--format kong');

    const kong = await runCli(['gateway', 'export', '--state', statePath, '--format', 'kong']);
    expect(kong.exitCode, String(kong.stderr)).toBe(0);
    const doc = parse(String(kong.stdout));
    expect(doc._transform).toBe(false);
    expect(doc.services.find((s: { name: string }) => s.name === 'fhir-api').enabled).toBe(false);
    expect(validateCurrent(doc), JSON.stringify(validateCurrent.errors)).toBe(true);
    const bad = await runCli(['gateway', 'export', '--state', statePath, '--format', 'yaml']);
    expect(bad.exitCode).toBe(2);
  });
});
