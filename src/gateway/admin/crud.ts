/**
 * Generic entity endpoints (Kong's kong/api/endpoints.lua): list + create on a collection,
 * get/patch/put/delete on an item, optionally nested under a parent whose
 * key the nested POST fills in (a child of another parent → 404).
 */
import type { CollectionName } from '../model/config.js';
import { notFound } from '../model/kong-error.js';
import type { GatewayConfig } from '../model/types.js';
import { deleteEntity, findEntity, insertEntity, updateEntity, upsertEntity, viewEntity, type Entity, type RepoContext } from '../store/repo.js';
import { paginate } from './list.js';
import type { AdminRequest, AdminResponse, Handler, RouteDef } from './router.js';

export interface ParentDef {
  collection: CollectionName;
  /** The child's foreign-key field pointing at the parent. */
  field: string;
}

function repoCtx(req: AdminRequest, form: boolean): RepoContext {
  return { plugins: req.ctx.plugins, coerce: form, passwords: 'hash' };
}

/** Resolves the parent segment (params[0]); 404 if it does not exist. */
function scope(req: AdminRequest, config: GatewayConfig, parent?: ParentDef): { fixed: Entity; within?: (e: Entity) => boolean } {
  if (!parent) return { fixed: {} };
  const p = findEntity(config, parent.collection, req.params[0] as string);
  if (!p) throw notFound();
  return { fixed: { [parent.field]: { id: p.id } }, within: (e) => (e[parent.field] as Entity | null)?.id === p.id };
}

const ok = (body: unknown, status = 200): AdminResponse => ({ status, body });

export function collectionHandlers(collection: CollectionName, parent?: ParentDef): Record<string, Handler> {
  return {
    GET(req) {
      const config = req.ctx.store.snapshot().config;
      const { within } = scope(req, config, parent);
      let items = config[collection] as unknown as Entity[];
      if (within) items = items.filter(within);
      const customId = req.query.get('custom_id');
      if (collection === 'consumers' && customId !== null) items = items.filter((e) => e.custom_id === customId);
      const page = paginate(items, req.query, req.path);
      page.data = (page.data as Entity[]).map((e) => viewEntity(config, collection, e));
      return ok(page);
    },
    async POST(req) {
      const body = await req.body();
      const entity = req.ctx.store.transact((draft) => {
        const { fixed } = scope(req, draft, parent);
        return viewEntity(draft, collection, insertEntity(draft, collection, body.data, repoCtx(req, body.form), fixed));
      });
      return ok(entity, 201);
    },
  };
}

export function itemHandlers(collection: CollectionName, parent?: ParentDef): Record<string, Handler> {
  const idParam = (req: AdminRequest): string => req.params[parent ? 1 : 0] as string;
  const find = (req: AdminRequest, config: GatewayConfig): { entity: Entity | undefined; fixed: Entity; within?: (e: Entity) => boolean } => {
    const s = scope(req, config, parent);
    return { ...s, entity: findEntity(config, collection, idParam(req), s.within) };
  };
  return {
    GET(req) {
      const config = req.ctx.store.snapshot().config;
      const { entity } = find(req, config);
      if (!entity) throw notFound();
      return ok(viewEntity(config, collection, entity));
    },
    async PATCH(req) {
      const body = await req.body();
      return ok(
        req.ctx.store.transact((draft) => {
          const { entity, fixed } = find(req, draft);
          if (!entity) throw notFound();
          return viewEntity(draft, collection, updateEntity(draft, collection, entity, body.data, repoCtx(req, body.form), fixed));
        }),
      );
    },
    async PUT(req) {
      const body = await req.body();
      return ok(
        req.ctx.store.transact((draft) => {
          const { fixed, within } = scope(req, draft, parent);
          return viewEntity(draft, collection, upsertEntity(draft, collection, idParam(req), body.data, repoCtx(req, body.form), fixed, within).entity);
        }),
      );
    },
    DELETE(req) {
      // Kong's kong/api/endpoints.lua: 204 even when the entity does not exist (the parent must exist).
      const { entity } = find(req, req.ctx.store.snapshot().config);
      if (entity) {
        req.ctx.store.transact((draft) => {
          const current = findEntity(draft, collection, entity.id as string);
          if (current) deleteEntity(draft, collection, current);
        });
      }
      return { status: 204 };
    },
  };
}

/** `/x` and `/x/:id` (or `/parents/:p/x` and `/parents/:p/x/:id`). */
export function entityRoutes(base: string, collection: CollectionName, parent?: ParentDef): RouteDef[] {
  return [
    { pattern: base, handlers: collectionHandlers(collection, parent) },
    { pattern: `${base}/:id`, handlers: itemHandlers(collection, parent) },
  ];
}
