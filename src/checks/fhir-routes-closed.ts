/**
 * Issue 23: no path to the FHIR server without credentials. Every route whose
 * traffic reaches the FHIR server (fhir-reach.ts: by the service's or the
 * upstream target's host and port, whatever the objects are named) must have
 * an enabled key-auth or basic-auth without `anonymous`, take https only, and
 * refuse a request without credentials: each is probed over HTTPS (verified
 * against the CA) and, where the gateway's plain HTTP listener is reachable
 * (native), over HTTP. 401 or 403 is closed (426 too on HTTP: Kong's answer
 * to an https-only route); anything else, a 2xx, a FHIR body, a 404 or a 5xx,
 * counts as open: the request was not refused, and so does no answer over
 * HTTPS; a refused connection on the HTTP port means nothing listens there
 * (closed). A route for which no concrete
 * request can be derived is not probed and fails (closed).
 */
import { networkInterfaces } from 'node:os';
import { request } from 'undici';
import { fhirUpstream, serviceFields } from '../runtime/gateway-declaration.js';
import { profileOf } from '../runtime/profiles.js';
import type { InstallConfig } from '../install-dir/install-config.js';
import { describeFailure } from './http.js';
import { fhirRoutes, type FhirAddress, type FhirRoute } from './fhir-reach.js';
import { gatewaySnapshot } from './gateway-snapshot.js';
import type { Check, CheckContext, GatewayRouteFinding } from './types.js';

/** Probes are bounded: beyond this many routes to the FHIR server, the rest fail unprobed. */
const MAX_PROBED_ROUTES = 40;
const PROBE_TIMEOUT_MS = 10_000;
const LOOPBACK = ['127.0.0.1', 'localhost', '::1', '0:0:0:0:0:0:0:1'];

/** The FHIR server's addresses as the gateway could name them. */
export function fhirAddress(config: InstallConfig): FhirAddress {
  const { host, port } = serviceFields(fhirUpstream(config));
  const hosts = new Set([host.toLowerCase()]);
  if (LOOPBACK.includes(host)) {
    // native: the FHIR server is a process on this host; it listens on loopback, or on every address
    for (const h of [...LOOPBACK, '0.0.0.0', ...config.hosts]) hosts.add(h.toLowerCase());
    for (const a of Object.values(networkInterfaces()).flat()) if (a) hosts.add(a.address.toLowerCase());
  }
  return { hosts: [...hosts], port };
}

interface Answer {
  text: string;
  open: boolean;
}

async function probe(ctx: CheckContext, base: string, r: NonNullable<FhirRoute['request']>, https: boolean): Promise<Answer> {
  const url = `${base}${r.path}`;
  try {
    const res = await request(url, {
      method: r.method as 'GET',
      headers: { accept: 'application/fhir+json, application/json', ...r.headers },
      headersTimeout: PROBE_TIMEOUT_MS,
      bodyTimeout: PROBE_TIMEOUT_MS,
      ...(https ? { dispatcher: ctx.https } : {}),
    });
    const text = (await res.body.text()).slice(0, 4096);
    const fhir = /"resourceType"\s*:\s*"([A-Za-z]+)"/.exec(text)?.[1];
    const closed = res.statusCode === 401 || res.statusCode === 403 || (!https && res.statusCode === 426);
    return { text: `${r.method} ${url} → ${res.statusCode}${fhir ? ` ${fhir}` : ''}`, open: !closed };
  } catch (err) {
    const reason = describeFailure(err);
    // nothing listens on the plain HTTP port: no path there. Any other failure proves nothing: fail closed
    if (!https && reason.startsWith('ECONNREFUSED')) return { text: `${r.method} ${url} → connection refused (no HTTP listener)`, open: false };
    return { text: `${r.method} ${url} → no answer (${reason})`, open: true };
  }
}

export const fhirRoutesClosed: Check = {
  id: 'fhir-routes-closed',
  spec: 'extra',
  title: 'Every gateway route to the FHIR server demands credentials (https only, no anonymous; probed without them)',
  mandatory: true,
  timeoutMs: 180_000,
  async run(ctx) {
    const snapshot = await gatewaySnapshot(ctx);
    const routes = fhirRoutes(snapshot, fhirAddress(ctx.config));
    // the gateway's plain HTTP listener is on this host natively; Kong's (8000) is not published by the docker runtime
    const httpBase = profileOf(ctx.config.runtime).gatewayHttpOnHost ? ctx.urls.gatewayHttp : null;
    const findings: GatewayRouteFinding[] = [];
    for (const [i, r] of routes.entries()) {
      const answers: Answer[] = [];
      const problems = [...r.problems];
      if (i >= MAX_PROBED_ROUTES) problems.push(`not probed (more than ${MAX_PROBED_ROUTES} routes reach the FHIR server)`);
      else if (!r.request) problems.push('no concrete request matches its paths: not probed, so not proven closed');
      else {
        answers.push(await probe(ctx, ctx.urls.gatewayHttps, r.request, true));
        if (httpBase) answers.push(await probe(ctx, httpBase, r.request, false));
        for (const a of answers) if (a.open) problems.push(`answered without credentials: ${a.text}`);
      }
      findings.push({
        route: r.route,
        service: r.service,
        via: r.via,
        protocols: r.protocols,
        guards: r.guards.map((g) => `${g.scheme}: ${g.plugin ?? 'none'}`),
        answers: answers.map((a) => a.text),
        open: problems.length > 0,
        problems,
      });
    }
    ctx.shared.gatewayRoutes = findings;
    const open = findings.filter((f) => f.open);
    const detail = findings.map((f) => `${f.route} (${f.service} → ${f.via}): ${f.answers.join('; ') || 'not probed'}`).join('\n');
    if (findings.length === 0) {
      return { status: 'fail', summary: 'no route reaches the FHIR server', detail: '', hint: 'Rerun `hospital-api install` (idempotent).' };
    }
    if (open.length) {
      return {
        status: 'fail',
        summary: open.map((f) => `route ${f.route} (service ${f.service}): ${f.problems.join('; ')}`).join(' | '),
        detail,
        hint: 'Delete the route, or attach key-auth or basic-auth without `anonymous` and take https only; `hospital-api install` restores the routes it made.',
      };
    }
    return { status: 'pass', summary: `${findings.length} routes reach the FHIR server, each refuses a request without credentials`, detail };
  },
};
