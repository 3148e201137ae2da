/**
 * Request headers sent upstream (Kong's kong/runloop/handler.lua): the client's, minus hop-by-hop
 * ones and those the gateway owns, plus X-Forwarded-*, X-Real-IP, Via,
 * X-Kong-Request-Id and the plugins' changes. Client-supplied X-Forwarded-*
 * values other than For are replaced unless the peer is in trusted_ips
 * (trusted-ips.ts): then each one the client sent is passed on as sent.
 */
import { SERVER } from './kong-response.js';

const VIA = `1.1 ${SERVER}`;
const DROP = new Set([
  'host', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade',
  'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-path',
  'x-forwarded-prefix', 'x-real-ip', 'x-kong-request-id', 'via',
]);

export interface ForwardInfo {
  host: string;
  clientIp: string;
  scheme: string;
  /** Host header without port, as the client sent it. */
  forwardedHost: string;
  forwardedPort: number;
  forwardedPath: string;
  /** The stripped prefix (strip_path), or null. */
  prefix: string | null;
  requestId: string;
  /** Content length of a body a plugin rewrote, or null when streaming the client's. */
  bodyLength: number | null;
  /** The peer is in trusted_ips: keep the client's X-Forwarded-Proto/Host/Port/Path/Prefix. */
  trusted: boolean;
}

const KEPT_WHEN_TRUSTED = new Set(['x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-path', 'x-forwarded-prefix']);

export function upstreamHeaders(raw: string[], overrides: Map<string, string | null> | null, f: ForwardInfo): string[] {
  const out: string[] = [];
  let xff: string | undefined;
  let via: string | undefined;
  let connectionTokens: string[] | null = null;
  let kept: Map<string, string> | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    if (name.charCodeAt(0) === 58) continue; // HTTP/2 pseudo-headers (:method, :path, :authority, :scheme)
    if (DROP.has(name)) {
      if (f.trusted && KEPT_WHEN_TRUSTED.has(name)) {
        kept ??= new Map();
        if (!kept.has(name)) kept.set(name, value);
      } else if (name === 'x-forwarded-for') xff = xff === undefined ? value : `${xff}, ${value}`;
      else if (name === 'via') via = via === undefined ? value : `${via}, ${value}`;
      else if (name === 'connection') connectionTokens = value.toLowerCase().split(/\s*,\s*/);
      continue;
    }
    if (overrides !== null && overrides.has(name)) continue;
    if (f.bodyLength !== null && name === 'content-length') continue;
    out.push(raw[i] as string, value);
  }
  if (connectionTokens !== null) {
    for (let i = out.length - 2; i >= 0; i -= 2) {
      if (connectionTokens.includes((out[i] as string).toLowerCase())) out.splice(i, 2);
    }
  }
  if (overrides !== null) for (const [name, value] of overrides) if (value !== null) out.push(name, value);
  if (f.bodyLength !== null) out.push('content-length', String(f.bodyLength));
  out.push(
    'host', f.host,
    'x-forwarded-for', xff === undefined ? f.clientIp : `${xff}, ${f.clientIp}`,
    'x-forwarded-proto', kept?.get('x-forwarded-proto') ?? f.scheme,
    'x-forwarded-host', kept?.get('x-forwarded-host') ?? f.forwardedHost,
    'x-forwarded-port', kept?.get('x-forwarded-port') ?? String(f.forwardedPort),
    'x-forwarded-path', kept?.get('x-forwarded-path') ?? f.forwardedPath,
    'x-real-ip', f.clientIp,
    'via', via === undefined ? VIA : `${via}, ${VIA}`,
    'x-kong-request-id', f.requestId,
  );
  const prefix = kept?.get('x-forwarded-prefix') ?? (f.prefix !== null && f.prefix !== '/' ? f.prefix : null);
  if (prefix !== null) out.push('x-forwarded-prefix', prefix);
  return out;
}
