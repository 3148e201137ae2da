/**
 * End to end through the real CLI on the native runtime (real gateway, FHIR
 * server and Hospital API as supervised processes, ephemeral ports):
 * install → consumer create --write-env → verify → record verify / openssl,
 * tamper → both refuse; another CA fails check 4; a partly provisioned
 * gateway is completed by a rerun; a second install changes nothing; no secret
 * leaks into records or output.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { execa } from 'execa';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPaths } from '../../src/install-dir/layout.js';
import { generateCa } from '../../src/tls/pki.js';
import { freePort } from '../../src/util/port-check.js';
import { cli as runCliOutcome, runCli, type CliOutcome } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { testPorts } from './stand-ins.js';
import { installArgs as installCommand } from '../helpers/install-args.js';

let dir = '';
let adminUrl = '';
let installArgs: string[] = [];
let key = '';
const outputs: string[] = [];

/** The CLI (test/helpers/cli.ts), its output kept for the last test's search for secrets. */
async function cli(args: string[]): Promise<CliOutcome> {
  const out = await runCliOutcome(args);
  outputs.push(out.out, out.err);
  return out;
}

async function admin(method: string, path: string): Promise<{ status: number; body: any }> {
  const res = await request(adminUrl + path, { method: method as 'GET' });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : null };
}

const openssl = (record: string, ca: string) =>
  execa('openssl', ['cms', '-verify', '-binary', '-content', record, '-inform', 'PEM', '-in', `${record}.p7s`, '-CAfile', ca, '-out', '/dev/null'], { reject: false });

beforeAll(async () => {
  dir = join(tempDir(), 'inst');
  const ports = await testPorts();
  adminUrl = `http://127.0.0.1:${ports.gatewayAdmin}`;
  installArgs = installCommand({ runtime: 'native', dir, host: '127.0.0.1', platformUrl: `http://127.0.0.1:${await freePort()}`, ports, json: true });
});

afterAll(async () => {
  await runCli(['down', '--dir', dir]);
  removeTempDirs();
});

describe('native end to end through the CLI', () => {
  it('install provisions the gateway; keys are 0600; a second install changes nothing', async () => {
    const first = await cli(installArgs);
    expect(first.code, first.err).toBe(0);
    const result = JSON.parse(first.out).result;
    expect(result.provisioning.map((s: { change: string }) => s.change)).toEqual(Array(10).fill('created'));
    const p = installPaths(dir);
    for (const f of [p.caKey, p.gatewayKey, p.signerKey, p.apiEnv]) expect(statSync(f).mode & 0o777, f).toBe(0o600);
    expect((await admin('GET', '/consumers')).body.data).toEqual([]);

    const second = await cli(installArgs);
    expect(second.code, second.err).toBe(0);
    const again = JSON.parse(second.out).result;
    expect(again.files.every((f: { change: string }) => f.change === 'unchanged')).toBe(true);
    expect(again.provisioning.every((s: { change: string }) => s.change === 'unchanged')).toBe(true);
  });

  it('a partly provisioned gateway (as a killed run leaves it) is completed by a rerun, without duplicates', async () => {
    const plugins = (await admin('GET', '/plugins')).body.data as Array<{ id: string; name: string }>;
    const keyAuth = plugins.find((x) => x.name === 'key-auth')!;
    expect((await admin('DELETE', '/routes/fhir-api-key-auth-route')).status).toBe(204);
    expect((await admin('DELETE', `/plugins/${keyAuth.id}`)).status).toBe(204);
    expect((await admin('DELETE', '/services/fhir-api-key-auth')).status).toBe(204);
    expect((await admin('DELETE', '/routes/fhir-api-route')).status).toBe(204);
    const rerun = await cli(installArgs);
    expect(rerun.code, rerun.err).toBe(0);
    const names = (list: Array<{ name: string }>) => list.map((x) => x.name).sort();
    expect(names((await admin('GET', '/services')).body.data)).toEqual(['fhir-api', 'fhir-api-key-auth']);
    expect(names((await admin('GET', '/routes')).body.data)).toEqual(['fhir-api-key-auth-route', 'fhir-api-route']);
    expect(names((await admin('GET', '/plugins')).body.data)).toEqual(['basic-auth', 'cors', 'key-auth', 'prometheus', 'request-size-limiting', 'request-size-limiting']);
  });

  it('consumer create prints the key once on stdout and writes it for the Hospital API', async () => {
    const r = await cli(['consumer', 'create', 'hospital-a', '--write-env', '--dir', dir]);
    expect(r.code, r.err).toBe(0);
    key = r.out.trim();
    expect(key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(r.err).not.toContain(key);
    expect(parseEnv(readFileSync(installPaths(dir).apiEnv, 'utf8')).FHIR_API_KEY).toBe(key);
  });

  it('consumer create with a key already in use fails and leaves no consumer behind (real gateway)', async () => {
    const r = await cli(['consumer', 'create', 'mallory', '--key', key, '--dir', dir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('ERR_INSTALL_KEY_TAKEN');
    expect((await admin('GET', '/consumers/mallory')).status).toBe(404);
    expect((await admin('GET', '/consumers')).body.data.map((c: { username: string }) => c.username)).toEqual(['hospital-a']);
  });

  it('verify passes every check, writes a signed record; record verify and openssl accept it, and refuse it tampered', async () => {
    const r = await cli(['verify', '--dir', dir, '--json']);
    const doc = JSON.parse(r.out);
    const failed = doc.result.record.checks.filter((c: { status: string }) => !['pass', 'skip'].includes(c.status));
    expect(failed, JSON.stringify(failed)).toEqual([]);
    expect(r.code).toBe(0);
    expect(doc.ok).toBe(true);
    const record = doc.result.recordPath as string;
    const ca = installPaths(dir).caCert;
    expect((await cli(['record', 'verify', record])).code).toBe(0);
    expect((await openssl(record, ca)).exitCode).toBe(0);
    const bytes = readFileSync(record);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] as number) ^ 1;
    writeFileSync(record, bytes);
    expect((await cli(['record', 'verify', record])).code).toBe(1);
    expect((await openssl(record, ca)).exitCode).not.toBe(0);
  });

  it('verify --ca <another CA>: check 4 fails in --json (not a usage error) and verify exits non-zero', async () => {
    const other = join(tempDir(), 'other-ca.pem');
    writeFileSync(other, generateCa({ commonName: 'Unrelated CA' }).certPem);
    const r = await cli(['verify', '--dir', dir, '--ca', other, '--json']);
    expect(r.code).toBe(1);
    const doc = JSON.parse(r.out);
    expect(doc.ok).toBe(false);
    expect(doc.error).toBeUndefined();
    const check4 = doc.result.record.checks.find((c: { spec: string }) => c.spec === '4.5.4');
    expect(check4.status).toBe('fail');
  });

  it('verify --ca <another CA> with NODE_TLS_REJECT_UNAUTHORIZED=0 still fails check 4 and exits non-zero', async () => {
    const other = join(tempDir(), 'other-ca.pem');
    writeFileSync(other, generateCa({ commonName: 'Unrelated CA' }).certPem);
    const r = await runCli(['verify', '--dir', dir, '--ca', other, '--json'], { env: { NODE_TLS_REJECT_UNAUTHORIZED: '0' } });
    outputs.push(String(r.stdout), String(r.stderr));
    expect(r.exitCode).toBe(1);
    const doc = JSON.parse(String(r.stdout));
    expect(doc.result.record.result).toBe('rejected');
    expect(doc.result.record.checks.find((c: { spec: string }) => c.spec === '4.5.4').status).toBe('fail');
  });

  it('no key, password or private key in any record, stdout or stderr (apart from consumer create stdout)', () => {
    const p = installPaths(dir);
    const files = readdirSync(p.reports).map((f) => readFileSync(join(p.reports, f), 'utf8'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    const leaked = [...files, ...outputs.filter((o) => o.trim() !== key)].filter((t) => t.includes(key) || /PRIVATE KEY/.test(t));
    expect(leaked).toEqual([]);
  });
});
