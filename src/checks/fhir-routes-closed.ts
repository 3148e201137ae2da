/**
 * Issues 23 and 43: no path to the FHIR server without credentials.
 *
 * Which routes reach the FHIR server is decided by where their traffic really goes
 * (fhir-reach.ts): every service host and upstream target is resolved where the gateway
 * resolves it (runtime.gatewayResolve) and compared, address and port, with every address
 * the FHIR server answers on (runtime.fhirListeners). A host that cannot be resolved may
 * reach it, and is judged as one that does. Every such route must have an enabled key-auth
 * or basic-auth without `anonymous`, take https only, and refuse a request without
 * credentials: each is probed over HTTPS (verified against the CA) and, where the gateway's
 * plain HTTP listener is reachable (native), over HTTP. 401 or 403 is closed (426 too on
 * HTTP: Kong's answer to an https-only route); anything else, a 2xx, a FHIR body, a 404 or
 * a 5xx, counts as open: the request was not refused, and so does no answer over HTTPS; a
 * refused connection on the HTTP port means nothing listens there (closed). A route for
 * which no concrete request can be derived is not probed and fails (closed).
 *
 * Independently of that matching, every other route is probed the same way, without
 * credentials, for `<path>/metadata` and `<path>/Patient`: an answer other than 401/403 whose
 * body is JSON with a `resourceType` is FHIR data, and fails the check whatever service the
 * route belongs to. A route that cannot be probed (no request derivable, no answer, a
 * protocol this host cannot reach) is not proven closed and fails too.
 */
import { checkServerIdentity } from 'node:tls';
import { Agent, request, type Dispatcher } from 'undici';
import { profileOf } from '../runtime/profiles.js';
import { describeFailure } from './http.js';
import { destinationHosts, fhirRoutes, gatewayRoutes, type GatewayReach, type GatewayRoute, type ProbeRequest } from './fhir-reach.js';
import type { Check, CheckContext, GatewayRouteFinding } from './types.js';

/** Probes are bounded: beyond this many routes, the rest fail unprobed. */
const MAX_PROBED_ROUTES = 40;
const PROBE_TIMEOUT_MS = 10_000;

interface Answer {
  text: string;
  /** Not refused (a route to the FHIR server must refuse). */
  open: boolean;
  /** A JSON body with a resourceType, not in a refusal. */
  fhirData: boolean;
  /** No answer at all (nothing proven). */
  unanswered: boolean;
}

/** At most this much of an answer is read. */
const MAX_BODY = 262_144;

/**
 * The FHIR resource type of an answer: a JSON body's string `resourceType`. A body longer than what is
 * read (a large CapabilityStatement) is judged by its first `"resourceType": "X"` pair instead (a linear
 * pattern); a nested one is FHIR data too.
 */
export function fhirResourceType(text: string, whole: boolean): string | null {
  if (whole) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return null;
    }
    const type = body && typeof body === 'object' && !Array.isArray(body) ? (body as { resourceType?: unknown }).resourceType : undefined;
    return typeof type === 'string' && type !== '' ? type.slice(0, 64) : null;
  }
  return text.trimStart().startsWith('{') ? (/"resourceType"\s*:\s*"([A-Za-z]{1,64})"/.exec(text)?.[1] ?? null) : null;
}

/** Up to MAX_BODY bytes of a body, and whether that was all of it. */
async function readSome(body: AsyncIterable<Buffer | string>): Promise<{ text: string; whole: boolean }> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    parts.push(b);
    size += b.length;
    if (size > MAX_BODY) return { text: Buffer.concat(parts).subarray(0, MAX_BODY).toString('utf8'), whole: false };
  }
  return { text: Buffer.concat(parts).toString('utf8'), whole: true };
}

async function probe(base: string, r: ProbeRequest, https: Dispatcher | null): Promise<Answer> {
  const url = `${base}${r.path}`;
  try {
    const res = await request(url, {
      method: r.method as 'GET',
      headers: { accept: 'application/fhir+json, application/json', ...r.headers },
      headersTimeout: PROBE_TIMEOUT_MS,
      bodyTimeout: PROBE_TIMEOUT_MS,
      ...(https ? { dispatcher: https } : {}),
    });
    const { text, whole } = await readSome(res.body);
    res.body.destroy();
    const type = fhirResourceType(text, whole);
    const refused = res.statusCode === 401 || res.statusCode === 403 || (!https && res.statusCode === 426);
    return { text: `${r.method} ${url} → ${res.statusCode}${type ? ` ${type}` : ''}`, open: !refused, fhirData: !refused && type !== null, unanswered: false };
  } catch (err) {
    const reason = describeFailure(err);
    // nothing listens on the plain HTTP port: no path there. Any other failure proves nothing: fail closed
    if (!https && reason.startsWith('ECONNREFUSED')) return { text: `${r.method} ${url} → connection refused (no HTTP listener)`, open: false, fhirData: false, unanswered: false };
    return { text: `${r.method} ${url} → no answer (${reason})`, open: true, fhirData: false, unanswered: true };
  }
}

/**
 * The HTTPS dispatcher for a route: the check's own, or, for a route that only matches a TLS server
 * name of its own (`snis`), one that sends that name and still verifies the certificate against the
 * CA and the gateway's own host name (never switched off).
 */
function httpsFor(ctx: CheckContext, sni: string | null, agents: Map<string, Dispatcher>): Dispatcher {
  if (!sni) return ctx.https;
  let agent = agents.get(sni);
  if (!agent) {
    const gatewayHost = new URL(ctx.urls.gatewayHttps).hostname.replace(/^\[|\]$/g, '');
    agent = new Agent({ connect: { ca: ctx.caPem, servername: sni, rejectUnauthorized: true, checkServerIdentity: (_name, cert) => checkServerIdentity(gatewayHost, cert) } });
    agents.set(sni, agent);
  }
  return agent;
}

interface Probes {
  answers: Answer[];
  problems: string[];
}

/** Every probe of one route: without credentials, over each scheme it takes that this host reaches. */
async function probeRoute(ctx: CheckContext, r: GatewayRoute, toFhir: boolean, httpBase: string | null, agents: Map<string, Dispatcher>): Promise<Probes> {
  const answers: Answer[] = [];
  const problems: string[] = [];
  const requests = [r.request, toFhir ? null : r.dataRequest].filter((q): q is ProbeRequest => q !== null);
  if (!r.request) problems.push('no concrete request matches its paths: not probed, so not proven closed');
  const bases: Array<[string, Dispatcher | null]> = [];
  if (r.protocols.includes('https')) bases.push([ctx.urls.gatewayHttps, httpsFor(ctx, r.sni, agents)]);
  if (r.protocols.includes('http')) {
    if (httpBase) bases.push([httpBase, null]);
    else if (!toFhir && !r.protocols.includes('https')) problems.push("takes plain http only, and the gateway's HTTP port is not reachable from this host: not probed, so not proven closed");
  }
  for (const [base, dispatcher] of bases) for (const q of requests) answers.push(await probe(base, q, dispatcher));
  for (const a of answers) {
    if (toFhir ? a.open : a.fhirData) problems.push(`answered without credentials: ${a.text}`);
    else if (!toFhir && a.unanswered) problems.push(`not proven closed: ${a.text}`);
  }
  return { answers, problems };
}

export const fhirRoutesClosed: Check = {
  id: 'fhir-routes-closed',
  spec: 'extra',
  title: 'Every gateway route to the FHIR server demands credentials (https only, no anonymous; probed without them)',
  mandatory: true,
  timeoutMs: 180_000,
  async run(ctx) {
    const snapshot = await ctx.facts.gatewaySnapshot();
    const [resolutions, listeners] = await Promise.all([ctx.runtime.gatewayResolve(destinationHosts(snapshot)), ctx.runtime.fhirListeners()]);
    if (listeners.every((l) => l.ranges.length === 0)) {
      return { status: 'fail', summary: 'where the FHIR server answers could not be read, so no route is proven closed', detail: '', hint: 'Start the stack (`hospital-api up`) and verify again.' };
    }
    const reach: GatewayReach = { resolutions, listeners };
    const routes = gatewayRoutes(snapshot, reach);
    const toFhir = new Map(fhirRoutes(snapshot, reach, routes).map((r) => [r.routeId, r]));
    // the gateway's plain HTTP listener is on this host natively; Kong's (8000) is not published by the docker runtime
    const httpBase = profileOf(ctx.config.runtime).gatewayHttpOnHost ? ctx.urls.gatewayHttp : null;
    const agents = new Map<string, Dispatcher>();
    const findings: GatewayRouteFinding[] = [];
    let elsewhere = 0;
    try {
      for (const [i, r] of routes.entries()) {
        const fhir = toFhir.get(r.routeId);
        const problems = [...(fhir?.problems ?? [])];
        let answers: Answer[] = [];
        if (i >= MAX_PROBED_ROUTES) problems.push(`not probed (more than ${MAX_PROBED_ROUTES} routes): not proven closed`);
        else {
          const probed = await probeRoute(ctx, fhir ? { ...r, protocols: fhir.protocols } : r, fhir !== undefined, httpBase, agents);
          answers = probed.answers;
          problems.push(...probed.problems.filter((p) => !problems.includes(p)));
        }
        if (!fhir && problems.length === 0) {
          elsewhere += 1;
          continue;
        }
        findings.push({
          route: r.route,
          service: r.service,
          via: r.via ?? 'not an address of the FHIR server',
          protocols: fhir?.protocols ?? r.protocols,
          guards: (fhir?.guards ?? []).map((g) => `${g.scheme}: ${g.plugin ?? 'none'}`),
          answers: answers.map((a) => a.text),
          open: problems.length > 0,
          problems,
        });
      }
    } finally {
      await Promise.all([...agents.values()].map((a) => a.close()));
    }
    const open = findings.filter((f) => f.open);
    const detail = [
      ...findings.map((f) => `${f.route} (${f.service} → ${f.via}): ${f.answers.join('; ') || 'not probed'}`),
      `the FHIR server answers the gateway at: ${listeners.map((l) => `${l.name} port ${l.port} on ${l.ranges.join(', ') || 'nothing'}`).join('; ')}`,
    ].join('\n');
    if (toFhir.size === 0) {
      return { status: 'fail', summary: 'no route reaches the FHIR server', detail, hint: 'Rerun `hospital-api install` (idempotent).', findings: { gatewayRoutes: findings } };
    }
    if (open.length) {
      return {
        status: 'fail',
        summary: open.map((f) => `route ${f.route} (service ${f.service}${f.via.includes('not resolved') ? ` → ${f.via}` : ''}): ${f.problems.join('; ')}`).join(' | '),
        detail,
        hint: 'Delete the route, or attach key-auth or basic-auth without `anonymous` and take https only; `hospital-api install` restores the routes it made.',
        findings: { gatewayRoutes: findings },
      };
    }
    const others = elsewhere ? `; ${elsewhere} other route${elsewhere === 1 ? '' : 's'} answered no FHIR data without credentials` : '';
    return { status: 'pass', summary: `${toFhir.size} routes reach the FHIR server, each refuses a request without credentials${others}`, detail, findings: { gatewayRoutes: findings } };
  },
};
