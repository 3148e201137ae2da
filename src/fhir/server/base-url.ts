/**
 * The public FHIR base that links and fullUrls name (HAPI's links, from its IServerAddressStrategy, point
 * at the internal address behind a proxy). Order: `--public-base`; else
 * X-Forwarded-Proto/Host/Port/Prefix when the peer is a trusted proxy (loopback
 * by default: the native gateway runs on this host); else the Host header + /fhir.
 * Like Kong (kong/runloop/handler.lua), the gateway sends X-Forwarded-Host without the port and the port
 * it was reached on in X-Forwarded-Port; we build proto://host[:port]prefix.
 */
import type { FastifyRequest } from 'fastify';
import { isLoopback } from '../../util/listen-address.js';

export interface BaseUrlOptions {
  /** A fixed public base (e.g. https://gw.example:8443/fhir-api), no trailing slash. */
  publicBase?: string;
  /** Peers whose X-Forwarded-* headers are believed; default: loopback addresses only. */
  trustProxy?: (address: string) => boolean;
}

const HOST = /^[A-Za-z0-9.\-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/;
const PREFIX = /^(?:\/[A-Za-z0-9._~\-]+)+$/;

function first(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v?.split(',')[0]?.trim() || undefined;
}

/** Appends a valid, non-default X-Forwarded-Port unless the host already names a port. */
function withPort(host: string, port: string | undefined, proto: 'http' | 'https'): string {
  if (/:\d+$/.test(host) && !host.endsWith(']')) return host;
  if (!port || !/^\d{1,5}$/.test(port)) return host;
  const n = Number(port);
  if (n < 1 || n > 65535 || n === (proto === 'https' ? 443 : 80)) return host;
  return `${host}:${n}`;
}

function peerIsTrusted(address: string, options: BaseUrlOptions): boolean {
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return options.trustProxy ? options.trustProxy(a) : isLoopback(a);
}

export function publicBaseUrl(request: FastifyRequest, options: BaseUrlOptions): string {
  if (options.publicBase) return options.publicBase.replace(/\/+$/, '');
  const h = request.headers;
  if (peerIsTrusted(request.socket.remoteAddress ?? '', options)) {
    const fHost = first(h['x-forwarded-host']);
    const fProto = first(h['x-forwarded-proto'])?.toLowerCase();
    const fPrefix = first(h['x-forwarded-prefix']);
    if (fHost && HOST.test(fHost)) {
      const proto = fProto === 'https' || fProto === 'http' ? fProto : 'http';
      // the proxy's route prefix replaces /fhir: the gateway maps /fhir-api/* onto /fhir/*
      const prefix = fPrefix && PREFIX.test(fPrefix.replace(/\/+$/, '')) ? fPrefix.replace(/\/+$/, '') : '/fhir';
      return `${proto}://${withPort(fHost, first(h['x-forwarded-port']), proto)}${prefix}`;
    }
  }
  const host = first(h.host);
  const scheme = (request.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  return `${scheme}://${host && HOST.test(host) ? host : 'localhost'}/fhir`;
}
