/**
 * Issue 26: the Hospital API's /metrics, scraped from a real running API after
 * real traffic, passes `promtool check metrics` with no finding, and carries
 * what the shipped dashboard and alert rules query (templates/monitoring/):
 * certificate time left in seconds, the audit log's state, record sizes.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/api/server/config.js';
import { tempDir } from '../helpers/tmp.js';
import { TOKEN_OK, useHarness, waitForAudit, type Harness } from '../api/harness.js';
import { makeRecord } from '../api/stand-ins.js';
import { checkMetrics, hasPromtool } from './promtool.js';

const harness = useHarness();
const ok = { platformCareId: 'care-1', token: TOKEN_OK };

async function scrape(t: Harness): Promise<string> {
  const res = await request(`${t.running.metricsUrl}/metrics`);
  expect(res.statusCode).toBe(200);
  return res.body.text();
}

function sample(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe('Hospital API metrics', () => {
  it.skipIf(!hasPromtool)('pass promtool check metrics with no finding after traffic, errors included', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 3) } } });
    expect((await t.post(ok)).status).toBe(200);
    expect((await t.post({ ...ok, token: 'Bearer nobody' })).status).toBeGreaterThanOrEqual(400);
    await waitForAudit(t, 2);
    const text = await scrape(t);
    const checked = await checkMetrics(text);
    expect(checked.output).toBe('');
    expect(checked.exitCode).toBe(0);
  });

  it('report certificate time left in seconds, the audit log writable, and the size of each granted record', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 3) } } });
    const granted = await t.post(ok);
    expect(granted.status).toBe(200);
    await waitForAudit(t, 1);
    const text = await scrape(t);
    const { X509Certificate } = await import('node:crypto');
    const { readFileSync } = await import('node:fs');
    const notAfter = new X509Certificate(readFileSync(t.pki.files.ca)).validToDate.getTime();
    const left = sample(text, 'hospital_api_certificate_remaining_seconds{certificate="fhir-ca-trusted"}');
    expect(left).not.toBeNull();
    // Whole seconds until notAfter, computed at the scrape (which happened between these two bounds).
    expect(left).toBeLessThanOrEqual(Math.floor((notAfter - (Date.now() - 60_000)) / 1000));
    expect(left).toBeGreaterThanOrEqual(Math.floor((notAfter - Date.now()) / 1000) - 1);
    expect(text).not.toContain('certificate_days_left');
    expect(text).not.toMatch(/^hospital_api_nodejs_active_\w+_total/m);
    expect(sample(text, 'hospital_api_audit_writable')).toBe(1);
    expect(sample(text, 'hospital_api_record_size_bytes_count')).toBe(1);
    expect(sample(text, 'hospital_api_record_size_bytes_sum')).toBe(Buffer.byteLength(granted.text));
  });

  it('report the audit log unwritable once a write to it failed', async () => {
    const t = await harness({ env: { AUDIT_LOG: '/dev/full' }, fhir: { records: { p1: makeRecord('p1', 1) } } });
    expect((await t.post(ok)).json.error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
    const text = await scrape(t);
    expect(sample(text, 'hospital_api_audit_writable')).toBe(0);
    expect(sample(text, 'hospital_api_record_size_bytes_count')).toBe(0);
  });
});

/**
 * Issue 45: the metrics listener answered any local account. With METRICS_TOKEN_FILE only the holder of
 * its token reads /metrics (as node_exporter's web config guards its listener); a token file other
 * accounts may read, or an empty one, is refused at start.
 */
describe('Hospital API metrics behind METRICS_TOKEN_FILE', () => {
  const token = 'metrics-token-0123456789abcdef';

  function tokenFile(dir: string, text: string, mode: number): string {
    const path = join(dir, 'metrics-token');
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    return path;
  }

  it('answers 401 with a Bearer challenge without the token or with another one, and the metrics with it', async () => {
    const dir = tempDir('metrics-token-');
    const t = await harness({ env: { METRICS_TOKEN_FILE: tokenFile(dir, `${token}\n`, 0o600) } });
    for (const authorization of [undefined, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, token, `Basic ${token}`]) {
      const res = await request(`${t.running.metricsUrl}/metrics`, authorization ? { headers: { authorization } } : {});
      const body = (await res.body.json()) as { error: { code: string } };
      expect([authorization, res.statusCode, res.headers['www-authenticate'], body.error.code]).toEqual([authorization, 401, 'Bearer realm="metrics"', 'ERR_API_METRICS_UNAUTHORIZED']);
    }
    const res = await request(`${t.running.metricsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toContain('hospital_api_audit_writable');
  });

  it('refuses to start with a token file any account may read, an empty one, or none', () => {
    const dir = tempDir('metrics-token-bad-');
    const env = { ...configEnv, METRICS_TOKEN_FILE: tokenFile(dir, token, 0o604) };
    expect(configError(env)).toMatch(/METRICS_TOKEN_FILE.*may be read by any account/);
    expect(configError({ ...configEnv, METRICS_TOKEN_FILE: tokenFile(tempDir('metrics-token-empty-'), '\n', 0o600) })).toMatch(/16 to 4096 printable/);
    expect(configError({ ...configEnv, METRICS_TOKEN_FILE: join(dir, 'absent') })).toMatch(/cannot read .*ENOENT/);
    // group-readable (0640, for a Prometheus in the service's group) is accepted
    expect(loadConfig({}, { ...configEnv, METRICS_TOKEN_FILE: tokenFile(tempDir('metrics-token-group-'), token, 0o640) }, dir).metricsToken).toBe(token);
  });
});

const configEnv = {
  PLATFORM_API_URL: 'http://platform.test/api',
  FHIR_BASE_URL: 'https://gw.test:8443/fhir-api-key-auth',
  FHIR_API_KEY: 'k-123',
  PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true',
};

function configError(env: Record<string, string>): string {
  try {
    loadConfig({}, env, tempDir('metrics-config-'));
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected loadConfig to refuse');
}
