/**
 * The admin API's route table and request dispatch (Kong's kong/api/endpoints.lua). Every
 * error is a KongError carrying its wire body; anything else becomes a 500
 * with a generic message (never the request body, which may hold secrets).
 */
import { randomUUID } from 'node:crypto';
import { isUuid } from '../model/fields.js';
import { isKongError, KongError, methodNotAllowed, notFound } from '../model/kong-error.js';
import type { CollectionName } from '../model/config.js';
import { findEntity } from '../store/repo.js';
import { parseBody, type ParsedBody } from './body.js';
import { postConfig, getConfig } from './config.js';
import { collectionHandlers, entityRoutes, itemHandlers } from './crud.js';
import { pluginsEnabled, rootInfo, status } from './info.js';
import { Router, type AdminContext, type AdminRequest, type AdminResponse, type Handler, type RouteDef } from './router.js';

export type { AdminContext } from './router.js';

const services = { collection: 'services', field: 'service' } as const;
const routes = { collection: 'routes', field: 'route' } as const;
const consumers = { collection: 'consumers', field: 'consumer' } as const;
const certificates = { collection: 'certificates', field: 'certificate' } as const;
const upstreams = { collection: 'upstreams', field: 'upstream' } as const;

/** Kong's kong/api/routes/targets.lua disables the flat /targets endpoints (use /upstreams/{u}/targets). */
const disabled: Record<string, Handler> = Object.fromEntries(
  ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => [m, () => { throw methodNotAllowed(); }]),
);

/** Kong mounts the prometheus plugin's GET /metrics on the admin API (kong/plugins/prometheus/api.lua). */
function metrics(req: AdminRequest): AdminResponse {
  const render = req.ctx.metrics;
  if (render === undefined) throw notFound();
  return { status: 200, text: render() };
}

const TABLE: RouteDef[] = [
  { pattern: '/', handlers: { GET: rootInfo } },
  { pattern: '/status', handlers: { GET: status } },
  { pattern: '/config', handlers: { GET: getConfig, POST: postConfig } },
  { pattern: '/plugins/enabled', handlers: { GET: pluginsEnabled } },
  { pattern: '/metrics', handlers: { GET: metrics } },
  ...entityRoutes('/services', 'services'),
  ...entityRoutes('/services/:s/routes', 'routes', services),
  ...entityRoutes('/services/:s/plugins', 'plugins', services),
  ...entityRoutes('/routes', 'routes'),
  ...entityRoutes('/routes/:r/plugins', 'plugins', routes),
  ...entityRoutes('/consumers', 'consumers'),
  ...entityRoutes('/consumers/:c/plugins', 'plugins', consumers),
  ...entityRoutes('/consumers/:c/key-auth', 'keyauth_credentials', consumers),
  ...entityRoutes('/consumers/:c/basic-auth', 'basicauth_credentials', consumers),
  ...entityRoutes('/consumers/:c/acls', 'acls', consumers),
  ...entityRoutes('/plugins', 'plugins'),
  ...entityRoutes('/key-auths', 'keyauth_credentials'),
  ...entityRoutes('/basic-auths', 'basicauth_credentials'),
  ...entityRoutes('/acls', 'acls'),
  ...entityRoutes('/ca_certificates', 'ca_certificates'),
  { pattern: '/certificates', handlers: collectionHandlers('certificates') },
  { pattern: '/certificates/:id', handlers: certificateItem() },
  ...entityRoutes('/certificates/:c/snis', 'snis', certificates),
  ...entityRoutes('/snis', 'snis'),
  ...entityRoutes('/upstreams', 'upstreams'),
  { pattern: '/upstreams/:u/targets/all', handlers: { GET: collectionHandlers('targets', upstreams).GET as Handler } },
  ...entityRoutes('/upstreams/:u/targets', 'targets', upstreams),
  { pattern: '/targets', handlers: disabled },
  { pattern: '/targets/:t', handlers: disabled },
  { pattern: '/targets/:t/upstream', handlers: disabled },
  ...entityRoutes('/consumers/:c/hmac-auth', 'hmacauth_credentials', consumers),
  ...entityRoutes('/hmac-auths', 'hmacauth_credentials'),
  ...entityRoutes('/consumers/:c/jwt', 'jwt_secrets', consumers),
  ...entityRoutes('/jwts', 'jwt_secrets'),
  ...entityRoutes('/consumers/:c/oauth2', 'oauth2_credentials', consumers),
  ...entityRoutes('/oauth2', 'oauth2_credentials'),
];

/**
 * Kong generates `/{entities}/{id}/{foreign key}` for every foreign key
 * (kong/api/endpoints.lua, get_entity_endpoint on the parent): GET reads,
 * PATCH updates the entity the child points at; 404 when it points at none.
 */
function viaForeign(child: CollectionName, field: string, parent: CollectionName, handler: Handler): Handler {
  return (req) => {
    const entity = findEntity(req.ctx.store.snapshot().config, child, req.params[0] as string);
    const ref = entity?.[field] as { id: string } | null | undefined;
    if (!ref) throw notFound();
    return handler({ ...req, params: [ref.id] });
  };
}

const BACK_REFERENCES: readonly [string, CollectionName, string, CollectionName][] = [
  ['/routes/:r/service', 'routes', 'service', 'services'],
  ['/plugins/:p/route', 'plugins', 'route', 'routes'],
  ['/plugins/:p/service', 'plugins', 'service', 'services'],
  ['/plugins/:p/consumer', 'plugins', 'consumer', 'consumers'],
  ['/services/:s/client_certificate', 'services', 'client_certificate', 'certificates'],
  ['/upstreams/:u/client_certificate', 'upstreams', 'client_certificate', 'certificates'],
  ['/snis/:s/certificate', 'snis', 'certificate', 'certificates'],
  ['/key-auths/:k/consumer', 'keyauth_credentials', 'consumer', 'consumers'],
  ['/basic-auths/:b/consumer', 'basicauth_credentials', 'consumer', 'consumers'],
  ['/hmac-auths/:h/consumer', 'hmacauth_credentials', 'consumer', 'consumers'],
  ['/jwts/:j/consumer', 'jwt_secrets', 'consumer', 'consumers'],
  ['/oauth2/:o/consumer', 'oauth2_credentials', 'consumer', 'consumers'],
  ['/acls/:a/consumer', 'acls', 'consumer', 'consumers'],
];
for (const [pattern, child, field, parent] of BACK_REFERENCES) {
  const item = itemHandlers(parent);
  TABLE.push({
    pattern,
    handlers: { GET: viaForeign(child, field, parent, item.GET as Handler), PATCH: viaForeign(child, field, parent, item.PATCH as Handler) },
  });
}

/**
 * `/certificates/{id or SNI name}` as kong/api/routes/certificates.lua has it:
 * a name that no SNI has is 404 "SNI not found", except for PUT, which
 * creates a certificate under a new id with that name among its `snis`.
 */
function certificateItem(): Record<string, Handler> {
  const item = itemHandlers('certificates');
  const byName = (req: AdminRequest): boolean => !isUuid(req.params[0] as string);
  const known = (req: AdminRequest): boolean => findEntity(req.ctx.store.snapshot().config, 'certificates', req.params[0] as string) !== undefined;
  const sniNotFound = (): never => {
    throw new KongError('ERR_GATEWAY_ADMIN_NOT_FOUND', { message: 'SNI not found' });
  };
  const guard = (h: Handler): Handler => (req) => (byName(req) && !known(req) ? sniNotFound() : h(req));
  return {
    GET: guard(item.GET as Handler),
    PATCH: guard(item.PATCH as Handler),
    DELETE: guard(item.DELETE as Handler),
    async PUT(req) {
      if (!byName(req)) return (item.PUT as Handler)(req);
      const name = req.params[0] as string;
      const body = await req.body();
      const snis = body.data.snis;
      // Kong adds the name to the snis sent with PUT; without snis, PUT clears them.
      let list: unknown = snis;
      if (Array.isArray(snis)) list = snis.includes(name) ? snis : [...snis, name];
      else if (typeof snis === 'string') list = snis === name ? [snis] : [snis, name];
      const existing = findEntity(req.ctx.store.snapshot().config, 'certificates', name);
      const id = (existing?.id as string | undefined) ?? randomUUID();
      const data = { ...body.data, ...(list === undefined ? {} : { snis: list }) };
      return (item.PUT as Handler)({ ...req, params: [id], body: async () => ({ data, form: body.form }) });
    },
  };
}

const router = new Router(TABLE);

export interface RawRequest {
  method: string;
  url: string;
  contentType: string | undefined;
  body: Buffer | undefined;
}

export async function handleRequest(ctx: AdminContext, raw: RawRequest): Promise<AdminResponse> {
  try {
    const url = new URL(raw.url, 'http://admin.invalid');
    let segments: string[];
    try {
      segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      throw notFound();
    }
    const hit = router.match(segments);
    if (!hit) throw notFound();
    const method = raw.method === 'HEAD' ? 'GET' : raw.method;
    const handler = hit.handlers[method];
    if (!handler) throw methodNotAllowed();
    let parsed: Promise<ParsedBody> | undefined;
    return await handler({
      ctx,
      method,
      params: hit.params,
      path: `/${segments.map(encodeURIComponent).join('/')}`,
      query: url.searchParams,
      contentType: raw.contentType,
      rawBody: raw.body,
      body: () => (parsed ??= parseBody(raw.contentType, raw.body)),
    });
  } catch (err) {
    if (isKongError(err)) return { status: err.status, body: err.body };
    return { status: 500, body: { message: 'An unexpected error occurred' } };
  }
}
