/**
 * The gateway state install declares (spec §2.3, issues 5, 12 and 23): every
 * service, route and plugin with its full configuration, as ONE structure.
 * install's provisioning writes it (src/install/provision.ts) and verify's
 * drift check compares the gateway with it field by field
 * (src/checks/gateway-drift.ts), so adding a plugin is one entry here.
 *
 * Every field install cares about is declared, defaults included: a field left
 * out would be one a rerun of install could not put back. Like decK's `diff`
 * (github.com/Kong/deck, diff/diff.go), anything that differs is a difference.
 */
import type { InstallConfig } from '../install-dir/install-config.js';
import { profileOf } from './profiles.js';

export interface DeclaredPlugin {
  name: string;
  /** Every config field install sets; verify compares each one. */
  config: Record<string, unknown>;
}

export interface DeclaredRoute {
  name: string;
  paths: string[];
  /** https only: no key or Basic credential ever travels over plain HTTP (issue 12). */
  protocols: string[];
}

export interface DeclaredService {
  name: string;
  /** protocol, host, port and path of the FHIR server, as Kong splits a service `url`. */
  url: string;
  plugins: DeclaredPlugin[];
  routes: DeclaredRoute[];
}

export interface DeclaredGateway {
  services: DeclaredService[];
  /** Plugins with no service, route or consumer (Kong's global scope). */
  globalPlugins: DeclaredPlugin[];
}

/**
 * The cors methods the FHIR API needs from a browser. Kong's default list
 * (kong/plugins/cors/schema.lua) also allows TRACE and CONNECT; no FHIR
 * interaction uses them.
 */
export const DECLARED_CORS_METHODS = ['GET', 'HEAD', 'PUT', 'PATCH', 'POST', 'DELETE', 'OPTIONS'];

/**
 * The largest request body the gateway lets through to the FHIR server on either FHIR route (issue 24):
 * 50 megabytes, room for a large transaction Bundle. Kong's unit: 1 megabyte = 1048576 bytes
 * (kong/plugins/request-size-limiting/handler.lua). The native FHIR server accepts 64 MiB
 * (src/fhir/server/app.ts, `fhir --body-limit`), so whatever the gateway lets through it can read.
 */
export const FHIR_MAX_BODY_MEGABYTES = 50;

/**
 * Kong's request-size-limiting with every field of its schema set
 * (github.com/Kong/kong, kong/plugins/request-size-limiting/schema.lua: allowed_payload_size,
 * size_unit one of bytes/kilobytes/megabytes, require_content_length). require_content_length
 * false: a chunked body is still accepted, counted as it arrives and refused past the limit.
 */
function requestSizeLimiting(): DeclaredPlugin {
  return { name: 'request-size-limiting', config: { allowed_payload_size: FHIR_MAX_BODY_MEGABYTES, size_unit: 'megabytes', require_content_length: false } };
}

/** Where the gateway reaches the FHIR server (the runtime's profile: the compose service, or loopback). */
export function fhirUpstream(config: InstallConfig): string {
  return profileOf(config.runtime).fhirUpstream(config);
}

export function declaredGateway(config: InstallConfig): DeclaredGateway {
  const url = fhirUpstream(config);
  return {
    services: [
      {
        name: 'fhir-api',
        url,
        plugins: [
          // anonymous null: a request without credentials is refused, never let through as a consumer
          // (kong/plugins/basic-auth/schema.lua)
          { name: 'basic-auth', config: { hide_credentials: true, anonymous: null } },
          {
            name: 'cors',
            config: {
              origins: config.cors.origins,
              headers: config.cors.headers,
              exposed_headers: config.cors.exposedHeaders,
              methods: DECLARED_CORS_METHODS,
              // never credentials: with a `*` origin that would let any site read with the user's credentials
              credentials: false,
            },
          },
          requestSizeLimiting(),
        ],
        routes: [{ name: 'fhir-api-route', paths: ['/fhir-api'], protocols: ['https'] }],
      },
      {
        name: 'fhir-api-key-auth',
        url,
        plugins: [
          // hide_credentials: the key never reaches the FHIR server (issue 5).
          // key_in_query false: Kong's default is true (kong/plugins/key-auth/schema.lua), and a key
          // in a URL ends up in access logs and proxies' logs; the Hospital API sends it as a header.
          { name: 'key-auth', config: { key_names: ['apikey'], hide_credentials: true, anonymous: null, key_in_query: false } },
          requestSizeLimiting(),
        ],
        routes: [{ name: 'fhir-api-key-auth-route', paths: ['/fhir-api-key-auth'], protocols: ['https'] }],
      },
    ],
    // Issue 26: Kong's prometheus plugin, global, so Kong in docker and the native gateway expose the same
    // families (kong/plugins/prometheus/schema.lua). per_consumer off: the consumer is in the API's own metrics.
    globalPlugins: [
      {
        name: 'prometheus',
        config: { per_consumer: false, status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, upstream_health_metrics: true },
      },
    ],
  };
}

/** Kong splits a service `url` into these fields (kong/db/schema/entities/services.lua). */
export function serviceFields(url: string): { protocol: string; host: string; port: number; path: string | null } {
  const u = new URL(url);
  const protocol = u.protocol.replace(':', '');
  const port = u.port ? Number(u.port) : protocol === 'https' ? 443 : 80;
  return { protocol, host: u.hostname.replace(/^\[|\]$/g, ''), port, path: u.pathname === '/' ? null : u.pathname };
}
