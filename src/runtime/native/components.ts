/**
 * What the native supervisor runs: one spec per component, derived from
 * install.json and the install directory, so `up`, `status` and `verify`
 * agree on names, ports and health URLs.
 *
 * Bind addresses (docs/runtime.md): the admin API is ALWAYS 127.0.0.1 (spec §1:
 * never published). The API, FHIR and gateway proxy ports bind 127.0.0.1 when
 * every name in install.json `hosts` is loopback, else all interfaces, since
 * spec §1 makes them reachable "on the node host".
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { gatewayStatusPort, type InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { isLoopback, parseListen } from '../../util/listen-address.js';
import { readEnvFile } from '../../util/env-file.js';
import { apiSettingsAdvice, missingApiSettings } from '../../install-dir/api-settings.js';
import { readDemoSettings } from '../../install-dir/demo-settings.js';
import { VERSION } from '../../version.js';
import { gatewayDegradation } from './gateway-health.js';
import { HSTS_DIRECTIVE } from '../../gateway/proxy/proxy-add-header.js';
import { metricsTokenPath } from '../../install-dir/metrics-token.js';

/** The CLI every component is started from (`node bin/hospital-api.js <command> …`). */
export const BIN_PATH = fileURLToPath(new URL('../../../bin/hospital-api.js', import.meta.url));

/**
 * Node options of every supervised component (before bin/hospital-api.js; the
 * systemd units and the hospital-api image's ENTRYPOINT use the same). V8 grows
 * its young generation under allocation pressure, up to 64 MiB per semi-space on
 * Node 24 (V8's heap/heap.cc sizes it from the heap limit): under steady load the
 * API's resident memory stepped from about 180 to 280-300 MiB minutes after start
 * while its live heap stayed at 20-40 MiB (`npm run bench -- soak`; the step is new
 * space going 32 → 64 → 128 MiB). A fixed 16 MiB semi-space takes that step away:
 * in the 10-minute soak the API ended at 204 MiB instead of 300 (at twice the
 * request rate). What growth remains is outside the JS heap (heap used stays flat).
 */
export const COMPONENT_NODE_ARGS: readonly string[] = ['--max-semi-space-size=16'];

/**
 * The Hospital API's malloc settings (the systemd unit gets them through the
 * spec's env; the hospital-api image sets the same ENV). glibc gives each thread
 * that allocates under contention an arena of its own, up to 8 per core, and
 * keeps what an arena once held (mallopt(3), M_ARENA_MAX). In a 15-minute soak
 * without the cap the API's RSS climbed in steps from 172 to 209 MiB while V8's
 * heap stayed flat (used 21 MiB, committed 57-59 MiB): anonymous memory outside
 * the JS heap. With two arenas, one 10-minute run held 157-197 MiB and ended
 * below its after-warm-up figure; another still grew 160 → 191 MiB, that time
 * in V8's committed heap (58 → 100 MiB, used flat). So the cap takes away the
 * malloc part of the growth, not all of it (`npm run bench -- soak`).
 * The API only: in the one run that capped every component, the FHIR server
 * held 264 MiB instead of its usual 163.
 */
export const API_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };

export type ComponentName = 'fhir' | 'gateway' | 'platform' | 'api';

export interface PortBinding {
  host: string;
  port: number;
}

export interface ComponentSpec {
  name: ComponentName;
  /** Arguments after `bin/hospital-api.js`. */
  args: string[];
  /** Answers 200 once the component serves (loopback). */
  healthUrl: string;
  ports: PortBinding[];
  version: string;
  /** Extra environment for the child (wins over the env file). */
  env?: Record<string, string>;
  /** Set when the component must not start yet; shown as its `down` detail. */
  blocked?: string;
  /**
   * Why a component that answers its health URL is nonetheless degraded (the
   * gateway: gateway-health.ts), from that answer's JSON; null when it is not.
   * `status` and `verify` show it; the supervisor does not restart for it.
   */
  degradation?: (healthBody: unknown) => string | null;
}

/** 127.0.0.1 when every configured host name is loopback, else all interfaces. */
export function publicBindHost(config: InstallConfig): string {
  return config.hosts.length > 0 && config.hosts.every(isLoopback) ? '127.0.0.1' : '0.0.0.0';
}

/** Why the Hospital API cannot start yet, or undefined when its settings are complete. */
export function apiBlockedReason(dir: string): string | undefined {
  const missing = missingApiSettings(dir);
  if (missing.length === 0) return undefined;
  return `${missing.join(' and ')} not set in hospital-api.env: run ${apiSettingsAdvice(dir, missing).map((a) => `\`${a}\``).join(' and ')}`;
}

/**
 * The API's metrics listener: METRICS_LISTEN from hospital-api.env when the
 * hospital set it, else loopback on install.json's metrics port (passed to the
 * child's environment so the port install chose is the one used).
 */
function metricsListen(dir: string, config: InstallConfig): { bindings: PortBinding[]; env?: Record<string, string> } {
  const value = readEnvFile(installPaths(dir).apiEnv).METRICS_LISTEN?.trim();
  if (!value) {
    const listen = `127.0.0.1:${config.ports.metrics}`;
    return { bindings: [{ host: '127.0.0.1', port: config.ports.metrics }], env: { METRICS_LISTEN: listen } };
  }
  if (value === 'off') return { bindings: [] };
  try {
    return { bindings: [parseListen(value, 'METRICS_LISTEN')] };
  } catch {
    return { bindings: [] }; // the API itself reports the bad value in its log
  }
}

/** The components of an installation, in start order. Reads the env file each call. */
export function componentSpecs(dir: string, config: InstallConfig): ComponentSpec[] {
  const p = installPaths(dir);
  const host = publicBindHost(config);
  const ports = config.ports;
  const statusPort = gatewayStatusPort(config);
  const specs: ComponentSpec[] = [
    {
      name: 'fhir',
      // No --public-base: links then follow the gateway's X-Forwarded-* (as Kong's kong/runloop/handler.lua sends them) through
      // the gateway, and the Host header on direct access (as HAPI's default IServerAddressStrategy does).
      // One port for both audiences: the server gives the full (unauthenticated) API to loopback
      // callers only (the gateway and the Hospital API run on this host) and answers other
      // addresses GET /fhir/metadata alone (spec check 4.5.2), 403 for the rest. No --open-api here.
      // Validation, referential integrity and synchronous=FULL are the server's defaults.
      args: ['fhir', '--host', host, '--port', String(ports.fhir), '--data', p.fhirData],
      healthUrl: `http://127.0.0.1:${ports.fhir}/fhir/metadata`,
      ports: [{ host, port: ports.fhir }],
      version: VERSION,
    },
    {
      name: 'gateway',
      args: [
        'gateway',
        '--admin-listen', `127.0.0.1:${ports.gatewayAdmin}`,
        '--proxy-listen', `${host}:${ports.gatewayHttp}`,
        '--proxy-ssl-listen', `${host}:${ports.gatewayHttps}`,
        '--cert', p.gatewayCert,
        '--key', p.gatewayKey,
        '--state', p.gatewayState,
        // HSTS on the proxy ports' answers (issue 48), as the docker runtime sets KONG_NGINX_PROXY_ADD_HEADER
        '--proxy-add-header', HSTS_DIRECTIVE,
        // install --monitoring: Kong's status_listen, loopback only (Prometheus /metrics)
        // (its /metrics for the holder of the API's metrics token only, as the API's own: issue 45)
        ...(statusPort === null ? [] : ['--status-listen', `127.0.0.1:${statusPort}`, '--status-token-file', metricsTokenPath(p)]),
      ],
      healthUrl: `http://127.0.0.1:${ports.gatewayAdmin}/status`,
      degradation: (body) => gatewayDegradation(body, p.gatewayState),
      ports: [
        { host: '127.0.0.1', port: ports.gatewayAdmin },
        { host, port: ports.gatewayHttp },
        { host, port: ports.gatewayHttps },
        ...(statusPort === null ? [] : [{ host: '127.0.0.1', port: statusPort }]),
      ],
      version: VERSION,
    },
  ];
  const demo = config.demo ? readDemoSettings(dir) : null;
  if (demo) {
    specs.push({
      name: 'platform',
      args: ['demo', '--platform-stand-in', '--listen', `127.0.0.1:${demo.platformPort}`, '--dir', p.root],
      healthUrl: `http://127.0.0.1:${demo.platformPort}/health`,
      ports: [{ host: '127.0.0.1', port: demo.platformPort }],
      version: `${VERSION} (DEMO stand-in)`,
    });
  }
  const metrics = metricsListen(dir, config);
  const api: ComponentSpec = {
    name: 'api',
    args: ['serve', '--host', host, '--port', String(ports.api), '--env-file', p.apiEnv, '--reload-status', join(p.run, 'api-reload.json')],
    healthUrl: `http://127.0.0.1:${ports.api}/api/health-check`,
    ports: [{ host, port: ports.api }, ...metrics.bindings],
    // HOSPITAL_API_DIR: the install the API runs from, whose certificates its metrics report (src/api/server/metrics.ts).
    env: { ...metrics.env, HOSPITAL_API_DIR: p.root, ...API_MALLOC_ENV },
    version: VERSION,
  };
  const blocked = apiBlockedReason(dir);
  if (blocked) api.blocked = blocked;
  specs.push(api);
  return specs;
}
