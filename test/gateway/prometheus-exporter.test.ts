/**
 * The prometheus exporter's counts, on the exporter itself (issue 49: it keeps one count per bucket and
 * label strings built once per series, so these pin what /metrics must still show): cumulative buckets
 * as Prometheus reads them, one series per status and source, label values escaped.
 */
import { describe, expect, it } from 'vitest';
import { PrometheusExporter, type PrometheusLogEntry, type PrometheusSwitches } from '../../src/gateway/plugins/prometheus/exporter.js';

const ALL: PrometheusSwitches = { per_consumer: true, status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, upstream_health_metrics: false };

function exporter(): PrometheusExporter {
  const e = new PrometheusExporter({
    nodeId: 'node-1',
    version: '3.9.1',
    listeners: () => ({ connectionsAccepted: 0, connectionsActive: 0, requestsTotal: 0, requestsInFlight: 0 }),
    targets: () => [],
    datastoreReachable: () => true,
  });
  e.enabled = true;
  return e;
}

function entry(over: Partial<PrometheusLogEntry> = {}): PrometheusLogEntry {
  return {
    service: 'fhir',
    route: 'open',
    consumer: null,
    status: 200,
    source: 'service',
    latencies: { kong: 0, proxy: 0, request: 0 },
    ingress: 0,
    egress: 0,
    ...over,
  };
}

/** The sample lines of one metric name, as `labels value`. */
function lines(text: string, name: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`)).map((l) => l.slice(name.length));
}

describe('prometheus exporter', () => {
  it('shows each latency histogram cumulatively: a bucket counts every value at or below its bound', () => {
    const e = exporter();
    for (const kong of [0, 3, 3, 8, 7000]) e.log(ALL, entry({ latencies: { kong, proxy: 30, request: kong + 30 } }));
    const text = e.render();
    const k = 'service="fhir",route="open",workspace="default"';
    expect(lines(text, 'kong_kong_latency_ms_bucket')).toEqual([
      `{${k},le="1"} 1`, `{${k},le="2"} 1`, `{${k},le="5"} 3`, `{${k},le="7"} 3`, `{${k},le="10"} 4`,
      `{${k},le="15"} 4`, `{${k},le="20"} 4`, `{${k},le="30"} 4`, `{${k},le="50"} 4`, `{${k},le="75"} 4`,
      `{${k},le="100"} 4`, `{${k},le="200"} 4`, `{${k},le="500"} 4`, `{${k},le="750"} 4`, `{${k},le="1000"} 4`,
      `{${k},le="3000"} 4`, `{${k},le="6000"} 4`, `{${k},le="+Inf"} 5`,
    ]);
    expect(lines(text, 'kong_kong_latency_ms_count')).toEqual([`{${k}} 5`]);
    expect(lines(text, 'kong_kong_latency_ms_sum')).toEqual([`{${k}} 7014`]);
    // request latencies 30, 33, 33, 38, 7030 on the upstream buckets (25, 50, 80, …, 60000)
    const request = lines(text, 'kong_request_latency_ms_bucket');
    expect(request[0]).toBe(`{${k},le="25"} 0`);
    expect(request[1]).toBe(`{${k},le="50"} 4`);
    expect(request[9]).toBe(`{${k},le="5000"} 4`);
    expect(request[10]).toBe(`{${k},le="10000"} 5`);
    expect(request.at(-1)).toBe(`{${k},le="+Inf"} 5`);
  });

  it('counts each status, source, route and consumer apart, with label values escaped', () => {
    const e = exporter();
    e.log(ALL, entry({ status: 200 }));
    e.log(ALL, entry({ status: 200 }));
    e.log(ALL, entry({ status: 401, source: 'kong' }));
    e.log(ALL, entry({ status: 401, source: 'service' }));
    e.log(ALL, entry({ route: 'a "quoted"\\route', consumer: 'alice', status: 200, ingress: 10, egress: 20 }));
    e.log({ ...ALL, per_consumer: false }, entry({ route: 'a "quoted"\\route', consumer: 'alice', status: 200, ingress: 1, egress: 2 }));
    const text = e.render();
    expect(lines(text, 'kong_http_requests_total').sort()).toEqual([
      '{service="fhir",route="a \\"quoted\\"\\\\route",code="200",source="service",workspace="default",consumer=""} 1',
      '{service="fhir",route="a \\"quoted\\"\\\\route",code="200",source="service",workspace="default",consumer="alice"} 1',
      '{service="fhir",route="open",code="200",source="service",workspace="default",consumer=""} 2',
      '{service="fhir",route="open",code="401",source="kong",workspace="default",consumer=""} 1',
      '{service="fhir",route="open",code="401",source="service",workspace="default",consumer=""} 1',
    ]);
    expect(lines(text, 'kong_bandwidth_bytes').sort()).toEqual([
      '{service="fhir",route="a \\"quoted\\"\\\\route",direction="egress",workspace="default",consumer=""} 2',
      '{service="fhir",route="a \\"quoted\\"\\\\route",direction="egress",workspace="default",consumer="alice"} 20',
      '{service="fhir",route="a \\"quoted\\"\\\\route",direction="ingress",workspace="default",consumer=""} 1',
      '{service="fhir",route="a \\"quoted\\"\\\\route",direction="ingress",workspace="default",consumer="alice"} 10',
    ]);
  });

  it('records nothing per request when every switch is off', () => {
    const e = exporter();
    e.log({ ...ALL, status_code_metrics: false, latency_metrics: false, bandwidth_metrics: false }, entry({ ingress: 5, egress: 5 }));
    const text = e.render();
    expect(lines(text, 'kong_http_requests_total')).toEqual([]);
    expect(lines(text, 'kong_bandwidth_bytes')).toEqual([]);
    expect(lines(text, 'kong_kong_latency_ms_count')).toEqual([]);
  });
});
