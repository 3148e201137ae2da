/**
 * The proxy's request entry point: compiles the configuration snapshot when
 * it changes (identity check, no work per request otherwise), matches the
 * route and hands the request to an Exchange (kong.md §4).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ConfigSnapshot } from '../model/types.js';
import { compileSnapshot, type CompiledConfig } from './compile.js';
import { Exchange } from './exchange.js';
import { normalisePath } from './normalise-path.js';
import { readHead } from './request-head.js';
import { nextRequestId } from './request-id.js';
import { ProxyRequestState } from './request-state.js';
import { UpstreamPools } from './upstream-pools.js';

const NO_ROUTE = 'no Route matched with those values';
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

function clientIp(req: IncomingMessage): string {
  const ip = req.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

export class GatewayProxy {
  private snapshot: ConfigSnapshot | null = null;
  private compiled: CompiledConfig | null = null;
  private readonly pools = new UpstreamPools();

  constructor(private readonly source: () => ConfigSnapshot) {}

  /** The compiled form of the current snapshot (recompiled when the snapshot object changes). */
  current(): CompiledConfig {
    const snap = this.source();
    if (snap !== this.snapshot || this.compiled === null) {
      this.snapshot = snap;
      try {
        this.compiled = compileSnapshot(snap, this.pools);
      } catch (err) {
        // Keep serving the last good configuration rather than failing every request.
        process.stderr.write(`gateway: configuration version ${snap.version} not applied (${(err as Error).message})\n`);
        if (this.compiled === null) throw err;
      }
    }
    return this.compiled;
  }

  handle(req: IncomingMessage, res: ServerResponse, scheme: 'http' | 'https'): void {
    const startedAt = performance.now();
    const requestId = nextRequestId();
    const cfg = this.current();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = normalisePath(q < 0 ? url : url.slice(0, q));
    const method = req.method ?? 'GET';
    const head = readHead(req.rawHeaders);
    // req.headers is built only when a route matches on headers.
    const match = path === null ? null : cfg.router.match(method, head.host, path, cfg.router.usesHeaders ? req.headers : NO_HEADERS);
    const route = match === null ? null : match.target;
    const state = new ProxyRequestState(req, method, path ?? '/', q < 0 ? '' : url.slice(q + 1), scheme, clientIp(req), route === null ? '' : route.service.id);
    const exchange = new Exchange(req, res, state, route, match === null ? null : match.prefix, head, requestId, startedAt);
    if (path === null) {
      exchange.exit({ status: 400, message: 'Bad request' });
      return;
    }
    if (route === null) {
      // Global plugins still shape the 404 (kong.md §2: cors headers on 404s).
      exchange.useHeaderFilters(cfg.globalChain);
      exchange.exit({ status: 404, message: NO_ROUTE });
      return;
    }
    if (scheme === 'http' && !route.http) {
      const code = route.route.https_redirect_status_code;
      if (code === 426) {
        exchange.exit({ status: 426, message: 'Please use HTTPS protocol', headers: ['Connection', 'Upgrade', 'Upgrade', 'TLS/1.2, HTTP/1.1'] });
      } else {
        exchange.exit({ status: code, message: '', headers: ['Location', `https://${head.host}${url}`] });
      }
      return;
    }
    if (scheme === 'https' && !route.https) {
      exchange.exit({ status: 404, message: NO_ROUTE });
      return;
    }
    exchange.run(route.chain, 0);
  }

  async close(): Promise<void> {
    await this.pools.closeAll();
  }
}
