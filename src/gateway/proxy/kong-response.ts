/**
 * Gateway-generated responses (kong.response.error and Kong's error
 * handlers: kong/pdk/response.lua, kong/error_handlers.lua): the body format follows Accept (JSON by default;
 * the error handlers default to text/plain when Accept is absent), with
 * `request_id`; headers `Server`, `X-Kong-Response-Latency`, `X-Kong-Request-Id`.
 */
import type { ServerResponse } from 'node:http';
import { KONG_VERSION } from '../plugins/version.js';
import { pushAddedHeaders } from './proxy-add-header.js';

export const SERVER = `kong/${KONG_VERSION}`;

/**
 * Kong's `headers` setting as far as `server_tokens` goes (kong.conf.default "headers";
 * kong/templates/kong_defaults.lua): on, Kong's own responses carry `Server: kong/x.y.z` and
 * proxied ones `Via: 1.1 kong/x.y.z`; `headers = off` drops both. Set once per process at start.
 */
let serverTokens = true;
export function setServerTokens(on: boolean): void {
  serverTokens = on;
}
export function serverTokensOn(): boolean {
  return serverTokens;
}
const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';
const XML_TYPE = 'application/xml; charset=utf-8';

const MIME: Record<string, string> = {
  'application/json': JSON_TYPE,
  'text/html': HTML_TYPE,
  'text/plain': TEXT_TYPE,
  'application/xml': XML_TYPE,
  'application/*': JSON_TYPE,
  'text/*': TEXT_TYPE,
  '*/*': JSON_TYPE,
};

/** Kong's get_response_type: the known media type with the highest q wins. */
export function responseType(accept: string | undefined): string {
  if (!accept) return JSON_TYPE;
  let best = JSON_TYPE;
  let bestQ = 0;
  for (const part of accept.split(',')) {
    const [type, ...params] = part.trim().toLowerCase().split(';');
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([\d.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    const mime = MIME[(type ?? '').trim()];
    if (q > bestQ) {
      bestQ = q;
      if (mime) best = mime;
    }
  }
  return best;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function errorBody(type: string, message: string, requestId: string): string {
  switch (type) {
    case TEXT_TYPE:
      return `${message}\nrequest_id: ${requestId}\n`;
    case HTML_TYPE:
      return `<!doctype html>\n<html>\n  <head>\n    <meta charset="utf-8">\n    <title>Error</title>\n  </head>\n  <body>\n    <h1>Error</h1>\n    <p>${escapeXml(message)}.</p>\n    <p>request_id: ${requestId}</p>\n  </body>\n</html>\n`;
    case XML_TYPE:
      return `<?xml version="1.0" encoding="UTF-8"?>\n<error>\n  <message>${escapeXml(message)}</message>\n  <requestid>${requestId}</requestid>\n</error>\n`;
    default:
      return `{\n  "message":${JSON.stringify(message)},\n  "request_id":"${requestId}"\n}`;
  }
}

export interface KongResponse {
  status: number;
  /** '' sends no body (cors preflight). */
  message: string;
  requestId: string;
  accept: string | undefined;
  /** Kong's error handlers (502/503/504) default to text/plain without Accept. */
  errorHandler: boolean;
  startedAt: number;
  method: string;
  /** Flat [name, value, …] pairs from plugins. */
  headers: string[];
}

export function sendKongResponse(res: ServerResponse, r: KongResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers = r.headers;
  let body = '';
  if (r.message !== '') {
    const type = responseType(r.accept ?? (r.errorHandler ? 'text/plain' : undefined));
    body = errorBody(type, r.message, r.requestId);
    headers.push('Content-Type', type);
  }
  headers.push(
    'Content-Length', String(Buffer.byteLength(body)),
    'X-Kong-Response-Latency', String(Math.round(performance.now() - r.startedAt)),
  );
  if (serverTokens) headers.push('Server', SERVER);
  headers.push('X-Kong-Request-Id', r.requestId);
  pushAddedHeaders(r.status, headers);
  res.writeHead(r.status, headers);
  res.end(r.method === 'HEAD' ? undefined : body);
}
