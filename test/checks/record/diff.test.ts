/**
 * Issue 23: `record diff A B`, through the real CLI (a child process) on
 * record files as verify writes them: the table by default, one JSON
 * document with --json, exit 0 when nothing differs and 1 when something
 * does, and a coded error for a file that is not a record: one of another
 * shape, a device, a directory, one too large. Its text never reaches the
 * terminal as control characters.
 */
import { mkdirSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildRecord, serializeRecord, type AcceptanceRecord, type RecordInput } from '../../../src/checks/record/build.js';
import { diffRecords } from '../../../src/checks/record/diff.js';
import type { InstallConfig } from '../../../src/install-dir/install-config.js';
import type { CheckResult } from '../../../src/checks/types.js';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

const config: InstallConfig = {
  formatVersion: 1, runtime: 'native', hosts: ['gw.example'],
  ports: { api: 9000, fhir: 8080, gatewayHttp: 8000, gatewayHttps: 8443, gatewayAdmin: 8001, metrics: 9464 },
  platformApiUrl: null, caGenerated: true, cors: { origins: ['*'], headers: null, exposedHeaders: null },
  toolkitVersion: '0.0.0', installedAt: '2026-01-01T00:00:00.000Z', demo: false,
};
const check = (id: string, status: CheckResult['status'], summary = 'ok'): CheckResult => ({ id, spec: 'extra', title: id, mandatory: true, status, summary, detail: '', durationMs: 1 });
const closed = { route: 'fhir-api-key-auth-route', service: 'fhir-api-key-auth', via: '127.0.0.1:8080', protocols: ['https'], guards: ['https: key-auth (service fhir-api-key-auth)'], answers: ['GET https://gw.example:8443/fhir-api-key-auth/metadata → 401'], open: false, problems: [] };

function record(over: Partial<RecordInput> = {}): AcceptanceRecord {
  return buildRecord({
    config, installDir: '/srv/h', testedAt: new Date('2026-03-04T05:06:07.089Z'), accepted: true, gatewayCertificate: null,
    ca: { path: '/srv/h/tls/ca.pem', certificate: { subject: 'CN=CA', issuer: 'CN=CA', serialNumber: '01', validFrom: '', validTo: '', fingerprint256: 'AA' } as never },
    versions: [{ name: 'gateway', version: '1.0.0' }],
    checks: [check('gateway-drift', 'pass'), check('fhir-routes-closed', 'pass')],
    gateway: { configSha256: 'a'.repeat(64), routes: [closed], undeclared: [{ kind: 'consumer', name: 'hospital-a', detail: '' }] },
    ...over,
  });
}

function write(r: AcceptanceRecord, name: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, serializeRecord(r));
  return path;
}

const drifted = (): AcceptanceRecord =>
  record({
    accepted: false,
    testedAt: new Date('2026-03-05T05:06:07.089Z'),
    checks: [check('gateway-drift', 'fail', 'plugin fhir-api/cors: config.credentials is true, declared false'), check('fhir-routes-closed', 'fail', 'route open-route ...')],
    gateway: {
      configSha256: 'b'.repeat(64),
      routes: [closed, { ...closed, route: 'open-route', service: 'reporting', guards: ['https: none'], answers: ['GET https://gw.example:8443/open/metadata → 200 CapabilityStatement'], open: true, problems: ['x'] }],
      undeclared: [{ kind: 'consumer', name: 'hospital-a', detail: '' }, { kind: 'route', name: 'open-route', detail: 'service reporting' }],
    },
  });

describe('record diff', () => {
  it('names what changed: result, configuration hash, each check, each route, each object install did not make; not the time of the run', () => {
    const d = diffRecords(record(), drifted());
    expect(d.same).toBe(false);
    expect(d.differences.map((x) => x.what)).toEqual([
      'result', 'gatewayConfigSha256', 'check fhir-routes-closed', 'check gateway-drift', 'route open-route', 'undeclared route open-route service reporting',
    ]);
    expect(d.differences[0]).toEqual({ what: 'result', a: 'accepted', b: 'rejected' });
    expect(d.differences.find((x) => x.what === 'route open-route')).toEqual({ what: 'route open-route', a: null, b: 'OPEN (reporting → 127.0.0.1:8080; https: none; https)' });
    expect(diffRecords(record(), record({ testedAt: new Date() })).same).toBe(true);
  });

  it('CLI: a table by default, exit 1 when the records differ, 0 when they do not', async () => {
    const a = write(record(), 'a.json');
    const b = write(drifted(), 'b.json');
    const r = await runCli(['record', 'diff', a, b]);
    expect(r.exitCode).toBe(1);
    const lines = String(r.stdout).split('\n');
    expect(lines[0]).toMatch(/^what\s+A\s+B/);
    expect(String(r.stdout)).toMatch(/result\s+accepted\s+rejected/);
    expect(String(r.stdout)).toMatch(/route open-route\s+\(absent\)\s+OPEN/);
    const same = await runCli(['record', 'diff', a, write(record(), 'a2.json')]);
    expect([same.exitCode, String(same.stdout).trim()]).toEqual([0, expect.stringMatching(/^no differences between /)]);
  });

  it('CLI --json: one document with every difference', async () => {
    const r = await runCli(['record', 'diff', write(record(), 'a.json'), write(drifted(), 'b.json'), '--json']);
    expect(r.exitCode).toBe(1);
    const doc = JSON.parse(String(r.stdout));
    expect(doc).toMatchObject({ ok: true, command: 'record diff', result: { same: false } });
    expect(doc.result.differences).toHaveLength(6);
  });

  it('a file that is not a record: a coded error (exit 2), nothing printed on stdout but the error document', async () => {
    const notRecord = join(tempDir(), 'x.json');
    writeFileSync(notRecord, '{"format":"something-else"}');
    const r = await runCli(['record', 'diff', write(record(), 'a.json'), notRecord, '--json']);
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(String(r.stdout)).error.code).toBe('ERR_INSTALL_RECORD_FORMAT');
    const garbage = join(tempDir(), 'y.json');
    writeFileSync(garbage, 'not json');
    expect((await runCli(['record', 'diff', garbage, notRecord])).exitCode).toBe(2);
    expect((await runCli(['record', 'diff', join(tempDir(), 'missing.json'), notRecord])).exitCode).toBe(3);
  });

  it('human output: control characters from a record (ESC sequences, BEL, DEL, C1) are shown escaped, never sent; --json keeps them exact', async () => {
    const hostile = '\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m\x7fend\r\ttab';
    const a = write(record(), 'a.json');
    const b = write(record({ checks: [check('gateway-drift', 'fail', hostile), check('fhir-routes-\x1b[8mhidden', 'pass')] }), 'b.json');
    const r = await runCli(['record', 'diff', a, b]);
    expect(r.exitCode).toBe(1);
    const out = String(r.stdout);
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out).toContain('fail: \\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\x9b1m\\x7fend\\x0d\\x09tab');
    expect(out).toContain('check fhir-routes-\\x1b[8mhidden');
    const json = await runCli(['record', 'diff', a, b, '--json']);
    const doc = JSON.parse(String(json.stdout));
    expect(doc.result.differences.find((d: { what: string }) => d.what === 'check gateway-drift').b).toBe(`fail: ${hostile}`);
  });

  it('a record whose lists or their entries have another shape: ERR_INSTALL_RECORD_FORMAT (exit 2) naming the file and the field, never an internal error', async () => {
    const good = write(record(), 'a.json');
    const shapes: Array<[string, unknown, RegExp]> = [
      ['checks', {}, /checks: must be array/],
      ['checks', 'x', /checks: must be array/],
      ['gatewayRoutes', 5, /gatewayRoutes: must be array/],
      ['versions', { gateway: '1' }, /versions: must be array/],
      ['gatewayUndeclared', true, /gatewayUndeclared: must be array/],
      ['checks', [1], /checks\[0\]: must be object/],
      ['checks', [null], /checks\[0\]: must be object/],
      ['checks', [{ id: { toString: 1 }, status: 'pass', summary: 's' }], /checks\[0\]\.id: must be string/],
      ['gatewayRoutes', [{ ...closed, guards: 'key-auth' }], /gatewayRoutes\[0\]\.guards: must be array/],
      ['gatewayRoutes', [['a']], /gatewayRoutes\[0\]: must be object/],
      ['versions', ['gateway'], /versions\[0\]: must be object/],
      ['gatewayUndeclared', [{ kind: 'route' }], /gatewayUndeclared\[0\]\.name is missing/],
    ];
    const runs = shapes.flatMap(([field, value, message], i) => {
      const file = join(tempDir(), `${field}-${i}.json`);
      writeFileSync(file, JSON.stringify({ ...record(), [field]: value }));
      return [[good, file], [file, good]].map(async (args) => ({ field, file, message, r: await runCli(['record', 'diff', ...args, '--json']) }));
    });
    for (const { field, file, message, r } of await Promise.all(runs)) {
      expect([field, r.exitCode], String(r.stdout)).toEqual([field, 2]);
      const error = JSON.parse(String(r.stdout)).error;
      expect(error.code).toBe('ERR_INSTALL_RECORD_FORMAT');
      expect(error.message).toContain(file);
      expect(error.message).toMatch(message);
    }
  });

  it('refuses what is not a regular file (a device, a directory) and a file over 16 MiB before reading it all', async () => {
    const good = write(record(), 'a.json');
    const zero = await runCli(['record', 'diff', '/dev/zero', good, '--json'], { timeout: 20_000 });
    expect(zero.exitCode).toBe(2);
    expect(JSON.parse(String(zero.stdout)).error).toMatchObject({ code: 'ERR_INSTALL_RECORD_FORMAT', message: expect.stringMatching(/\/dev\/zero .*a character device, not a regular file/) });
    const folder = join(tempDir(), 'folder.json');
    mkdirSync(folder);
    const dir = await runCli(['record', 'diff', good, folder, '--json']);
    expect([dir.exitCode, JSON.parse(String(dir.stdout)).error.message]).toEqual([2, expect.stringContaining('a directory, not a regular file')]);
    const big = write(record(), 'big.json');
    truncateSync(big, 16 * 1024 * 1024 + 1);
    const large = await runCli(['record', 'diff', good, big, '--json']);
    expect([large.exitCode, JSON.parse(String(large.stdout)).error.message]).toEqual([2, expect.stringContaining('larger than 16 MiB')]);
  });
});
