/**
 * Kong's injected `nginx_proxy_add_header` (kong.conf `nginx_proxy_*`,
 * KONG_NGINX_PROXY_ADD_HEADER: "Entries prefixed with nginx_proxy_ are injected
 * into the server block directive handling Kong Gateway's proxy ports"), as
 * nginx's `add_header name value [always]` reads it (ngx_http_headers_module):
 * the header goes on every answer of the proxy ports, proxied or the
 * gateway's own, with a status of 200, 201, 204, 206, 301, 302, 303, 304, 307
 * or 308, or on every status with `always`. Several directives in one value
 * are separated as Kong's documentation shows (`A 'x'; add_header B 'y'`).
 *
 * Installs use it for HSTS (issue 48): `Strict-Transport-Security
 * "max-age=63072000" always`, Mozilla's recommendation (mozilla/ssl-config-generator),
 * so a browser that reached the basic-auth route once over HTTPS never sends its
 * password over plain HTTP. Set once per process at start.
 */
import { HospitalApiError } from '../../errors/index.js';

export interface AddedHeader {
  name: string;
  value: string;
  always: boolean;
}

/** The statuses nginx's add_header applies to without `always`. */
const WITHOUT_ALWAYS = new Set([200, 201, 204, 206, 301, 302, 303, 304, 307, 308]);
/** One directive: a token name, a value quoted (no quote inside) or bare, and an optional `always`. */
const DIRECTIVE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s+(?:"([^"]*)"|'([^']*)'|([^\s"';]+))(\s+always)?$/;

/** @throws ERR_USAGE naming the directive nginx would refuse */
export function parseProxyAddHeader(value: string): AddedHeader[] {
  const out: AddedHeader[] = [];
  if (value.trim() === '') return out;
  for (const [i, part] of value.split(/;\s*(?:add_header\s+)?/).entries()) {
    const text = part.trim();
    if (text === '' && i > 0) continue;
    const m = DIRECTIVE.exec(text);
    const headerValue = m ? (m[2] ?? m[3] ?? m[4] ?? '') : '';
    if (!m || /[\r\n\0]/.test(headerValue)) {
      throw new HospitalApiError('ERR_USAGE', { detail: `nginx_proxy_add_header: "${text.slice(0, 80)}" is not \`<name> "<value>" [always]\`` });
    }
    out.push({ name: m[1] as string, value: headerValue, always: m[5] !== undefined });
  }
  return out;
}

/** What installs set on every runtime: HSTS for two years on every answer (Mozilla's ssl-config-generator, "intermediate"). */
export const HSTS_DIRECTIVE = 'Strict-Transport-Security "max-age=63072000" always';

let added: readonly AddedHeader[] = [];

export function setProxyAddHeaders(list: readonly AddedHeader[]): void {
  added = list;
}

/** Appends the configured headers that apply to an answer of `status` to flat [name, value, …] pairs. */
export function pushAddedHeaders(status: number, out: string[]): void {
  for (const h of added) if (h.always || WITHOUT_ALWAYS.has(status)) out.push(h.name, h.value);
}
