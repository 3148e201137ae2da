/**
 * Prometheus metrics of the Hospital API (prom-client), served on their own
 * listener (METRICS_LISTEN, loopback by default) so the public port never
 * exposes them. One registry per app, so tests can run several apps.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'route' | 'outcome' | 'status'>;
  duration: Histogram<'route' | 'outcome'>;
  pages: Counter;
  resources: Counter;
  upstreamErrors: Counter<'upstream' | 'code'>;
}

export function createMetrics(): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hospital_api_' });
  return {
    registry,
    requests: new Counter({
      name: 'hospital_api_requests_total',
      help: 'Requests by route, outcome (audit decision, or ok/error) and status',
      labelNames: ['route', 'outcome', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'hospital_api_request_duration_seconds',
      help: 'Request latency by route and outcome',
      labelNames: ['route', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    pages: new Counter({
      name: 'hospital_api_fhir_pages_total',
      help: 'FHIR $everything pages fetched',
      registers: [registry],
    }),
    resources: new Counter({
      name: 'hospital_api_fhir_resources_total',
      help: 'FHIR resources returned to callers (after de-duplication)',
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'hospital_api_upstream_errors_total',
      help: 'Failed upstream calls by upstream (platform, fhir) and error code',
      labelNames: ['upstream', 'code'],
      registers: [registry],
    }),
  };
}
