/**
 * Issue 26: the monitoring templates a site installs (templates/monitoring/).
 * The alert rules pass `promtool check rules`; `promtool test rules` proves
 * each alert fires on a series that should trigger it and stays quiet on one
 * that should not; every dashboard query is PromQL Prometheus accepts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { hasPromtool, promtool } from './promtool.js';

const DIR = join(import.meta.dirname, '..', '..', 'templates', 'monitoring');
const RULES = join(DIR, 'hospital-api-alerts.yml');
const RULE_TESTS = join(DIR, 'hospital-api-alerts.test.yml');
const DASHBOARD = join(DIR, 'hospital-api-dashboard.json');

interface AlertRule {
  alert: string;
  expr: string;
}
interface AlertCase {
  alertname: string;
  exp_alerts: unknown[];
}

const rules = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> }).groups.flatMap((g) => g.rules);
const cases = (parse(readFileSync(RULE_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test: AlertCase[] }> }).tests.flatMap((t) => t.alert_rule_test);

afterAll(() => removeTempDirs());

describe('shipped alert rules', () => {
  it('are the four issue 26 asks for, the gateway 5xx ratio, and issue 46\'s two on scheduled acceptance', () => {
    expect(rules.map((r) => r.alert).sort()).toEqual([
      'GatewayHigh5xxRatio',
      'HospitalApiAcceptanceRejected',
      'HospitalApiAcceptanceStale',
      'HospitalApiAuditUnavailable',
      'HospitalApiCertificateExpiresSoon',
      'HospitalApiComponentDown',
      'HospitalApiHigh5xxRatio',
    ]);
  });

  it('each have a case where they fire and one where they stay quiet', () => {
    for (const r of rules) {
      const mine = cases.filter((c) => c.alertname === r.alert);
      expect(mine.some((c) => c.exp_alerts.length > 0), `${r.alert} fires somewhere`).toBe(true);
      expect(mine.some((c) => c.exp_alerts.length === 0), `${r.alert} stays quiet somewhere`).toBe(true);
    }
  });

  it.skipIf(!hasPromtool)('pass promtool check rules', async () => {
    const r = await promtool(['check', 'rules', RULES]);
    expect(r.output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(r.exitCode).toBe(0);
  });

  it.skipIf(!hasPromtool)('pass promtool test rules', async () => {
    const r = await promtool(['test', 'rules', RULE_TESTS]);
    expect(r.output).toContain('SUCCESS');
    expect(r.exitCode).toBe(0);
  });
});

describe('shipped Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    __inputs: Array<{ name: string }>;
    templating: { list: Array<{ name: string; type: string; query: string; current: { value: string } }> };
    panels: Array<{ title: string; datasource: { uid: string }; targets: Array<{ expr: string; datasource: { uid: string } }> }>;
  };
  const exprOf = (title: string): string => dashboard.panels.find((p) => p.title === title)!.targets[0]!.expr;

  it('issue 48: a datasource variable, imported as the chosen Prometheus, that every panel and query uses', () => {
    expect(dashboard.templating.list).toEqual([expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus', current: expect.objectContaining({ value: '${DS_PROMETHEUS}' }) })]);
    for (const p of dashboard.panels) {
      expect([p.title, p.datasource.uid]).toEqual([p.title, '${datasource}']);
      for (const t of p.targets) expect([p.title, t.datasource.uid]).toEqual([p.title, '${datasource}']);
    }
  });

  it.skipIf(!hasPromtool)('issue 48: the 5xx ratio panels show 0 with traffic and no 5xx, not "No data"; the ratio with some', async () => {
    const dir = tempDir('monitoring-5xx-');
    writeFileSync(join(dir, 'empty.yml'), 'groups: []\n');
    const test = {
      rule_files: ['empty.yml'],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: [
            // 60 answers a minute on each, and 6 a minute of them 5xx on the second
            { series: 'hospital_api_requests_total{route="/api/patients",status="200"}', values: '0+60x10' },
            { series: 'hospital_api_requests_total{route="/api/health-check",status="200"}', values: '0+54x10' },
            { series: 'hospital_api_requests_total{route="/api/health-check",status="503"}', values: '0+6x10' },
            { series: 'kong_http_requests_total{service="fhir-api-key-auth",route="r",code="200"}', values: '0+60x10' },
          ],
          promql_expr_test: [
            { expr: exprOf('API 5xx ratio'), eval_time: '10m', exp_samples: [{ labels: '{route="/api/patients"}', value: 0 }, { labels: '{route="/api/health-check"}', value: 0.1 }] },
            { expr: exprOf('Gateway 5xx ratio'), eval_time: '10m', exp_samples: [{ labels: '{service="fhir-api-key-auth"}', value: 0 }] },
          ],
        },
      ],
    };
    writeFileSync(join(dir, 'ratios.test.yml'), stringify(test));
    const r = await promtool(['test', 'rules', 'ratios.test.yml'], dir);
    expect(r.output).toContain('SUCCESS');
    expect(r.exitCode).toBe(0);
  });

  it('has the panels the issue lists, on an imported Prometheus data source', () => {
    expect(dashboard.__inputs.map((i) => i.name)).toEqual(['DS_PROMETHEUS']);
    expect(dashboard.panels.map((p) => p.title)).toEqual(
      expect.arrayContaining([
        'API traffic by outcome',
        'API latency',
        'Record sizes',
        'Gateway traffic by status',
        'Certificate days left',
        'Audit log',
        'Components up',
        'Acceptance',
        'Acceptance record age',
      ]),
    );
  });

  it.skipIf(!hasPromtool)('queries only PromQL that Prometheus accepts', async () => {
    // Each query as a recording rule: promtool check rules parses its expression.
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(10);
    const file = join(tempDir('monitoring-dashboard-'), 'queries.yml');
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:query_${i}:expr`, expr })) }] }));
    const r = await promtool(['check', 'rules', file]);
    expect(r.output).toContain(`SUCCESS: ${exprs.length} rules found`);
    expect(r.exitCode).toBe(0);
  });
});
