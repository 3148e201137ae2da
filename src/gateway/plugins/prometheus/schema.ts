/**
 * prometheus config (Kong 3.9's kong/plugins/prometheus/schema.lua): six
 * booleans, all off by default. With every one off an instance still turns the
 * counters on (Kong's exporter `configure`) but records nothing per request.
 * Kong's custom validator (the nginx shared dict `prometheus_metrics` exists)
 * has no counterpart here: the counters live in the gateway process.
 */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface PrometheusConfig {
  per_consumer: boolean;
  status_code_metrics: boolean;
  ai_metrics: boolean;
  latency_metrics: boolean;
  bandwidth_metrics: boolean;
  upstream_health_metrics: boolean;
}

const flag = { type: 'boolean', default: false } as const;

export const prometheusSchema = defineSchema({
  name: 'prometheus',
  version: KONG_VERSION,
  priority: 13 /* Kong's kong/plugins/prometheus/handler.lua PRIORITY */,
  consumerScopable: true,
  fields: {
    per_consumer: flag,
    status_code_metrics: flag,
    // Accepted for decK round trips; this gateway has no AI plugins, so there is nothing to count.
    ai_metrics: flag,
    latency_metrics: flag,
    bandwidth_metrics: flag,
    upstream_health_metrics: flag,
  },
});
