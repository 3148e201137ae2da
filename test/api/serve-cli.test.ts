/**
 * `hospital-api serve` as a real child process: configuration errors exit 3
 * before listening, a full run serves records, SIGTERM exits 0, and neither
 * the token nor the API key appears on stdout, stderr or in the audit log.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { freePort, freePorts } from '../../src/util/port-check.js';
import { runCli, startCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { API_KEY, TOKEN_OK, defaultPlatform, testPki } from './harness.js';
import { makeRecord, startFhirStandIn, startPlatform } from './stand-ins.js';

afterAll(() => removeTempDirs());

const clean = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };

describe('serve: configuration errors', () => {
  it('exits 3 naming a missing variable, without listening or printing the key', async () => {
    const dir = tempDir();
    const port = await freePort();
    const res = await runCli(['serve', '--port', String(port)], {
      cwd: dir,
      env: { ...clean, PLATFORM_API_URL: 'http://127.0.0.1:1', FHIR_BASE_URL: 'https://127.0.0.1:2/fhir', FHIR_API_KEY: '' },
      extendEnv: false,
    });
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain('ERR_CONFIG_MISSING');
    expect(res.stderr).toContain('FHIR_API_KEY');
  });

  it('exits 3 naming an invalid variable read from --env-file', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'api.env'), `PLATFORM_API_URL=http://127.0.0.1:1\nFHIR_BASE_URL=http://127.0.0.1:2/fhir\nFHIR_API_KEY=${API_KEY}\n`);
    const res = await runCli(['serve', '--env-file', 'api.env', '--port', String(await freePort())], { cwd: dir, env: clean, extendEnv: false });
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain('Invalid setting FHIR_BASE_URL');
    expect(String(res.stdout) + String(res.stderr)).not.toContain(API_KEY);
  });
});

describe('serve: the identifier system is part of the match', () => {
  const settings = { ...clean, PLATFORM_API_URL: 'http://127.0.0.1:1', FHIR_BASE_URL: 'https://127.0.0.1:2/fhir', FHIR_API_KEY: API_KEY };

  it('refuses to start without PLATFORM_IDENTIFIER_SYSTEM (exit 3), naming the install command that sets it', async () => {
    const dir = tempDir();
    const port = await freePort();
    const res = await runCli(['serve', '--host', '127.0.0.1', '--port', String(port)], {
      cwd: dir,
      extendEnv: false,
      env: { ...settings, HOSPITAL_API_DIR: '/srv/hospital-api' },
    });
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain('ERR_API_IDENTIFIER_SYSTEM_MISSING');
    expect(res.stderr).toContain('hospital-api install --dir /srv/hospital-api --identifier-system');
    expect(res.stderr).not.toContain('listening on');
    expect(String(res.stdout) + String(res.stderr)).not.toContain(API_KEY);
    // Outside an install: the settings file to put it in.
    writeFileSync(join(dir, 'api.env'), 'LOG_LEVEL=info\n');
    const bare = await runCli(['serve', '--port', String(port), '--env-file', 'api.env'], { cwd: dir, extendEnv: false, env: settings });
    expect(bare.exitCode).toBe(3);
    expect(bare.stderr).toContain(`PLATFORM_IDENTIFIER_SYSTEM=<the platform's identifier system URI> in ${join(dir, 'api.env')}`);
  });

  it('refuses a system that is not an absolute URI', async () => {
    const res = await runCli(['serve', '--port', String(await freePort())], {
      cwd: tempDir(),
      extendEnv: false,
      env: { ...settings, PLATFORM_IDENTIFIER_SYSTEM: 'care id' },
    });
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain('Invalid setting PLATFORM_IDENTIFIER_SYSTEM');
  });
});

describe('serve: a full run', () => {
  it('serves, audits, stops on SIGTERM with exit 0 and never prints a secret', async () => {
    const { pki } = testPki();
    const dir = tempDir();
    const platform = await startPlatform(defaultPlatform);
    const fhir = await startFhirStandIn({ tls: pki.server, apiKey: API_KEY, patients: { 'care-1': ['p1'] }, records: { p1: makeRecord('p1', 40) }, maxPageSize: 15 });
    const [port, metricsPort] = (await freePorts(2)) as [number, number];
    // The key lives in the .env file, as the installer writes it; the rest in the environment.
    writeFileSync(join(dir, '.env'), `FHIR_API_KEY=${API_KEY}\nFHIR_CA_FILE=${pki.files.ca}\n`, { mode: 0o600 });
    // --any-identifier-system, said explicitly: the stand-in's patients are keyed by the bare care id.
    const child = startCli(['serve', '--host', '127.0.0.1', '--port', String(port), '--any-identifier-system'], {
      cwd: dir,
      extendEnv: false,
      env: { ...clean, PLATFORM_API_URL: platform.url, FHIR_BASE_URL: fhir.url, METRICS_LISTEN: `127.0.0.1:${metricsPort}`, AUDIT_LOG: 'audit/audit.log', LOG_LEVEL: 'debug' },
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      for (let i = 0; i < 200 && !(stderr.includes('ALLOWED_CALLERS is empty') && stderr.includes('listening on')); i++) await new Promise((r) => setTimeout(r, 50));
      expect(stderr).toContain(`listening on http://127.0.0.1:${port}`);
      expect(stderr).toContain('ALLOWED_CALLERS is empty');
      expect(stderr).toContain('any identifier system may match');
      const url = `http://127.0.0.1:${port}`;
      const post = async (token: string) => {
        const res = await request(`${url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ platformCareId: 'care-1', token }) });
        return { status: res.statusCode, body: (await res.body.json()) as { resources?: unknown[] } };
      };
      const granted = await post(TOKEN_OK);
      expect(granted.status).toBe(200);
      expect(granted.body.resources).toHaveLength(40);
      expect((await post('Bearer wrong-token-9b7c')).status).toBe(400);
      const metrics = await request(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(await metrics.body.text()).toContain('hospital_api_requests_total');
    } finally {
      child.kill('SIGTERM');
    }
    const result = await child;
    await Promise.all([platform.close(), fhir.close()]);
    expect(result.exitCode).toBe(0);
    expect(stderr).toContain('SIGTERM');
    // One "request completed" line per request: the streamed 200 and the refused 400.
    const completed = stderr.split('\n').filter((l) => l.includes('"msg":"request completed"'));
    expect(completed.map((l) => JSON.parse(l).res?.statusCode)).toEqual([200, 400]);
    const audit = readFileSync(join(dir, 'audit/audit.log'), 'utf8');
    const lines = audit.trim().split('\n').map((l) => JSON.parse(l) as { phase: string; decision: string });
    expect(lines.map((l) => [l.phase, l.decision])).toEqual([['started', 'granted'], ['end', 'granted'], ['end', 'denied']]);
    for (const secret of [API_KEY, TOKEN_OK, 'good-token', 'wrong-token-9b7c']) {
      expect(String(result.stdout) + stderr, secret).not.toContain(secret);
      expect(audit, secret).not.toContain(secret);
    }
  });
});
