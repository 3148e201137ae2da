/**
 * The counters of the prometheus plugin and their text exposition, with the
 * names, types, HELP texts, labels and buckets of Kong 3.9's
 * kong/plugins/prometheus/exporter.lua, so one dashboard (Kong's grafana.com
 * 7424, templates/monitoring/) reads Kong and this gateway alike. One exporter
 * per gateway process, as Kong keeps one set in its shared dict: counters
 * survive configuration changes, and per-request families are shown only
 * while at least one prometheus instance is configured (exporter.lua
 * `configure`, prometheus.lua `metric_data` with `local_only`).
 *
 * Families Kong has and this gateway does not, because nothing here has them:
 * kong_nginx_timers (nginx timers), kong_memory_lua_shared_dict_{,total_}bytes
 * (nginx shared dicts), kong_stream_sessions_total / kong_session_duration_ms
 * (stream subsystem), the AI families (AI plugins) and the hybrid-mode ones.
 */

/** Kong's exporter.lua KONG_LATENCY_BUCKETS (ms). */
export const KONG_LATENCY_BUCKETS = [1, 2, 5, 7, 10, 15, 20, 30, 50, 75, 100, 200, 500, 750, 1000, 3000, 6000] as const;
/** Kong's exporter.lua UPSTREAM_LATENCY_BUCKETS (ms): upstream and request latency. */
export const UPSTREAM_LATENCY_BUCKETS = [25, 50, 80, 100, 250, 400, 700, 1000, 2000, 5000, 10000, 30000, 60000] as const;

/** What the log phase knows about one finished request (Kong's kong.log.serialize(), the fields the exporter reads). */
export interface PrometheusLogEntry {
  /** Service name, else its host (exporter.lua `log`). */
  service: string;
  /** Route name, else its id. */
  route: string;
  /** The identified consumer's username, or null. */
  consumer: string | null;
  status: number;
  /** "service" when the upstream produced the response, else "kong" (kong.response.get_source()). */
  source: 'service' | 'kong';
  /** ms: Kong's own latency, the upstream's (null when none answered), the whole request. */
  latencies: { kong: number; proxy: number | null; request: number };
  /** Bytes received from and sent to the client for this request (nginx request_length, bytes_sent); 0 when unknown. */
  ingress: number;
  egress: number;
}

/** The per-request switches of a plugin instance (schema.ts). */
export interface PrometheusSwitches {
  per_consumer: boolean;
  status_code_metrics: boolean;
  latency_metrics: boolean;
  bandwidth_metrics: boolean;
  upstream_health_metrics: boolean;
}

/** Connection and request counts of the proxy listeners (Kong's nginx stub_status figures). */
export interface ListenerStats {
  connectionsAccepted: number;
  connectionsActive: number;
  requestsTotal: number;
  /** Requests being answered now ("writing"). */
  requestsInFlight: number;
}

/** One upstream target's health as exporter.lua `set_healthiness_metrics` reports it. */
export interface TargetHealth {
  upstream: string;
  target: string;
  /** ip:port, or '' for dns_error. */
  address: string;
  state: 'healthchecks_off' | 'healthy' | 'unhealthy' | 'dns_error';
}

export interface ExporterSources {
  nodeId: string;
  /** Kong's version string in kong_node_info (the Kong release this gateway speaks for). */
  version: string;
  listeners(): ListenerStats;
  targets(): TargetHealth[];
  /** Whether the configuration store can be read (kong_datastore_reachable). */
  datastoreReachable(): boolean;
}

const HEALTH_STATES = ['healthchecks_off', 'healthy', 'unhealthy', 'dns_error'] as const;

/** Label values as prometheus.lua writes them: backslash, quote and newline escaped. */
function escape(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

function labels(names: readonly string[], values: readonly string[]): string {
  return names.map((n, i) => `${n}="${escape(values[i] ?? '')}"`).join(',');
}

interface HistogramSeries {
  /** Observations per bucket, not cumulative: one increment per observation; render sums them into Kong's `le` counts. */
  buckets: number[];
  count: number;
  sum: number;
}

class Histogram {
  readonly series = new Map<string, HistogramSeries>();
  constructor(readonly bounds: readonly number[]) {}

  observe(key: string, value: number): void {
    let s = this.series.get(key);
    if (s === undefined) {
      s = { buckets: new Array<number>(this.bounds.length).fill(0), count: 0, sum: 0 };
      this.series.set(key, s);
    }
    // The first bound at or above the value (most latencies fall in the first buckets); past the last, +Inf only.
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        s.buckets[i] = (s.buckets[i] as number) + 1;
        break;
      }
    }
    s.count++;
    s.sum += value;
  }
}

/**
 * The label strings of one service, route and consumer, built once (issue 49): building them per request
 * (an escape per value, a join per family) made the global prometheus plugin cost the gateway about a fifth
 * more CPU per request. As bounded as the counters themselves: one per series the counters hold.
 */
interface SeriesLabels {
  latency: string;
  ingress: string;
  egress: string;
  /** By status × 2 + (source is the service ? 1 : 0). */
  status: Map<number, string>;
}

function add(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

const sorted = <T>(m: Map<string, T>): Array<[string, T]> => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

const LATENCY_LABELS = ['service', 'route', 'workspace'] as const;
const STATUS_LABELS = ['service', 'route', 'code', 'source', 'workspace', 'consumer'] as const;
const BANDWIDTH_LABELS = ['service', 'route', 'direction', 'workspace', 'consumer'] as const;
/** This gateway has Kong's single `default` workspace (message.workspace_name). */
const WORKSPACE = 'default';

export class PrometheusExporter {
  /** A prometheus instance is configured (Kong's IS_PROMETHEUS_ENABLED). */
  enabled = false;
  /** Set by each logged request from its instance's upstream_health_metrics (handler.lua `log`). */
  exportUpstreamHealth = false;
  private readonly requests = new Map<string, number>();
  private readonly bandwidth = new Map<string, number>();
  private readonly kongLatency = new Histogram(KONG_LATENCY_BUCKETS);
  private readonly upstreamLatency = new Histogram(UPSTREAM_LATENCY_BUCKETS);
  private readonly requestLatency = new Histogram(UPSTREAM_LATENCY_BUCKETS);

  constructor(private readonly sources: ExporterSources) {}

  /** Label strings by service, route, then consumer ('' when not counted per consumer). */
  private readonly labelCache = new Map<string, Map<string, Map<string, SeriesLabels>>>();

  private seriesLabels(service: string, route: string, consumer: string): SeriesLabels {
    let byRoute = this.labelCache.get(service);
    if (byRoute === undefined) this.labelCache.set(service, (byRoute = new Map()));
    let byConsumer = byRoute.get(route);
    if (byConsumer === undefined) byRoute.set(route, (byConsumer = new Map()));
    let l = byConsumer.get(consumer);
    if (l === undefined) {
      l = {
        latency: labels(LATENCY_LABELS, [service, route, WORKSPACE]),
        ingress: labels(BANDWIDTH_LABELS, [service, route, 'ingress', WORKSPACE, consumer]),
        egress: labels(BANDWIDTH_LABELS, [service, route, 'egress', WORKSPACE, consumer]),
        status: new Map(),
      };
      byConsumer.set(consumer, l);
    }
    return l;
  }

  /** handler.lua `log` then exporter.lua `log`: what one request adds. */
  log(conf: PrometheusSwitches, e: PrometheusLogEntry): void {
    this.exportUpstreamHealth = conf.upstream_health_metrics;
    if (!conf.bandwidth_metrics && !conf.status_code_metrics && !conf.latency_metrics) return;
    const consumer = conf.per_consumer && e.consumer !== null ? e.consumer : '';
    const l = this.seriesLabels(e.service, e.route, consumer);
    if (conf.bandwidth_metrics) {
      if (e.ingress > 0) add(this.bandwidth, l.ingress, e.ingress);
      if (e.egress > 0) add(this.bandwidth, l.egress, e.egress);
    }
    if (conf.status_code_metrics) {
      const code = e.status * 2 + (e.source === 'service' ? 1 : 0);
      let key = l.status.get(code);
      if (key === undefined) {
        key = labels(STATUS_LABELS, [e.service, e.route, String(e.status), e.source, WORKSPACE, consumer]);
        l.status.set(code, key);
      }
      add(this.requests, key, 1);
    }
    if (conf.latency_metrics) {
      const key = l.latency;
      if (e.latencies.request >= 0) this.requestLatency.observe(key, e.latencies.request);
      if (e.latencies.proxy !== null && e.latencies.proxy >= 0) this.upstreamLatency.observe(key, e.latencies.proxy);
      if (e.latencies.kong >= 0) this.kongLatency.observe(key, e.latencies.kong);
    }
  }

  /** The exposition for GET /metrics (Content-Type `text/plain; charset=UTF-8`, as exporter.lua `collect` sets it). */
  render(): string {
    const out: string[] = [];
    const head = (name: string, help: string, type: string) => out.push(`# HELP kong_${name} ${help}`, `# TYPE kong_${name} ${type}`);
    const { nodeId, version } = this.sources;
    const counters = this.enabled;
    // Families in the order of Kong's sorted keys.
    if (counters && this.bandwidth.size > 0) {
      head('bandwidth_bytes', 'Total bandwidth (ingress/egress) throughput in bytes', 'counter');
      for (const [k, v] of sorted(this.bandwidth)) out.push(`kong_bandwidth_bytes{${k}} ${v}`);
    }
    head('datastore_reachable', 'Datastore reachable from Kong, 0 is unreachable', 'gauge');
    out.push(`kong_datastore_reachable ${this.sources.datastoreReachable() ? 1 : 0}`);
    if (counters && this.requests.size > 0) {
      head('http_requests_total', 'HTTP status codes per consumer/service/route in Kong', 'counter');
      for (const [k, v] of sorted(this.requests)) out.push(`kong_http_requests_total{${k}} ${v}`);
    }
    if (counters) this.histogram(out, 'kong_latency_ms', 'Latency added by Kong and enabled plugins for each service/route in Kong', this.kongLatency);
    const mem = process.memoryUsage();
    head('memory_workers_lua_vms_bytes', 'Allocated bytes in worker Lua VM', 'gauge');
    // The gateway's one JavaScript heap stands where Kong reports each worker's Lua VM.
    out.push(`kong_memory_workers_lua_vms_bytes{${labels(['node_id', 'pid', 'kong_subsystem'], [nodeId, String(process.pid), 'http'])}} ${mem.heapUsed}`);
    const l = this.sources.listeners();
    head('nginx_connections_total', 'Number of connections by subsystem', 'gauge');
    const states: Array<[string, number]> = [
      ['accepted', l.connectionsAccepted],
      ['active', l.connectionsActive],
      ['handled', l.connectionsAccepted],
      ['reading', 0],
      ['total', l.requestsTotal],
      ['waiting', Math.max(0, l.connectionsActive - l.requestsInFlight)],
      ['writing', l.requestsInFlight],
    ];
    for (const [state, v] of states) out.push(`kong_nginx_connections_total{${labels(['node_id', 'subsystem', 'state'], [nodeId, 'http', state])}} ${v}`);
    if (counters) {
      head('nginx_metric_errors_total', 'Number of nginx-lua-prometheus errors', 'counter');
      out.push('kong_nginx_metric_errors_total 0');
    }
    head('nginx_requests_total', 'Number of requests total', 'gauge');
    out.push(`kong_nginx_requests_total{${labels(['node_id', 'subsystem'], [nodeId, 'http'])}} ${l.requestsTotal}`);
    head('node_info', 'Kong Node metadata information', 'gauge');
    out.push(`kong_node_info{${labels(['node_id', 'version'], [nodeId, version])}} 1`);
    if (counters) {
      this.histogram(out, 'request_latency_ms', 'Total latency incurred during requests for each service/route in Kong', this.requestLatency);
      this.histogram(out, 'upstream_latency_ms', 'Latency added by upstream response for each service/route in Kong', this.upstreamLatency);
    }
    if (this.exportUpstreamHealth) {
      const targets = this.sources.targets();
      if (targets.length > 0) {
        head(
          'upstream_target_health',
          'Health status of targets of upstream. States = healthchecks_off|healthy|unhealthy|dns_error, value is 1 when state is populated.',
          'gauge',
        );
        const rows: string[] = [];
        for (const t of targets) {
          for (const state of HEALTH_STATES) {
            rows.push(`kong_upstream_target_health{${labels(['upstream', 'target', 'address', 'state', 'subsystem'], [t.upstream, t.target, t.address, state, 'http'])}} ${t.state === state ? 1 : 0}`);
          }
        }
        out.push(...rows.sort());
      }
    }
    return `${out.join('\n')}\n`;
  }

  private histogram(out: string[], name: string, help: string, h: Histogram): void {
    if (h.series.size === 0) return;
    out.push(`# HELP kong_${name} ${help}`, `# TYPE kong_${name} histogram`);
    const series = sorted(h.series);
    for (const [k, s] of series) {
      // Cumulative, as Prometheus reads a histogram: every bound counts the values at or below it.
      let below = 0;
      h.bounds.forEach((b, i) => {
        below += s.buckets[i] as number;
        out.push(`kong_${name}_bucket{${k},le="${b}"} ${below}`);
      });
      out.push(`kong_${name}_bucket{${k},le="+Inf"} ${s.count}`);
    }
    for (const [k, s] of series) out.push(`kong_${name}_count{${k}} ${s.count}`);
    for (const [k, s] of series) out.push(`kong_${name}_sum{${k}} ${s.sum}`);
  }
}
