/**
 * Issue 26: the Hospital API's /metrics, scraped from a real running API after
 * real traffic, passes `promtool check metrics` with no finding, and carries
 * what the shipped dashboard and alert rules query (templates/monitoring/):
 * certificate time left in seconds, the audit log's state, record sizes.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
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
