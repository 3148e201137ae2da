/**
 * `POST /config` replaces the whole configuration from a declarative
 * document atomically (Kong's kong/api/routes/config.lua): 201 with the entities by id, 304 with
 * `?check_hash=1` when unchanged, 400 "expected a declarative configuration"
 * when empty, 400 code 14 when invalid. Unlike Kong, this works next to the
 * CRUD endpoints (our store is DB-backed-style; docs/gateway-admin.md).
 * `GET /config` returns the current configuration as `{"config": "<yaml>"}`.
 */
import { createHash } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { exportDeclarative } from '../declarative/export.js';
import { parseDeclarative } from '../declarative/parse.js';
import { COLLECTIONS } from '../model/config.js';
import { badRequest, declarativeInvalid } from '../model/kong-error.js';
import { assertNoForbiddenKeys, parseBody } from './body.js';
import type { AdminRequest, AdminResponse } from './router.js';

const RAW_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml', 'text/plain'];

async function readDocument(req: AdminRequest): Promise<unknown> {
  const { data } = await parseBody(req.contentType, req.rawBody, RAW_TYPES);
  if (Object.keys(data).length === 0) throw badRequest('expected a declarative configuration');
  if (!('config' in data)) return data;
  if (typeof data.config !== 'string' || data.config.trim() === '') throw badRequest('expected a declarative configuration');
  let doc: unknown;
  try {
    doc = parseYaml(data.config);
  } catch (err) {
    throw declarativeInvalid({ '@entity': [`failed parsing declarative configuration: ${(err as Error).message.split('\n')[0]}`] });
  }
  assertNoForbiddenKeys(doc);
  return doc;
}

export async function postConfig(req: AdminRequest): Promise<AdminResponse> {
  const doc = await readDocument(req);
  const hash = createHash('md5').update(JSON.stringify(doc)).digest('hex');
  const checkHash = req.query.get('check_hash');
  if ((checkHash === '1' || checkHash === 'true') && req.ctx.lastConfigHash === hash) return { status: 304 };
  const config = parseDeclarative(doc, req.ctx.plugins);
  const snapshot = req.ctx.store.replace(config);
  req.ctx.lastConfigHash = hash;
  const body: Record<string, Record<string, unknown>> = {};
  for (const name of COLLECTIONS) {
    const items = snapshot.config[name];
    if (items.length > 0) body[name] = Object.fromEntries(items.map((e) => [e.id, e]));
  }
  return { status: 201, body };
}

export function getConfig(req: AdminRequest): AdminResponse {
  return { status: 200, body: { config: stringifyYaml(exportDeclarative(req.ctx.store.snapshot().config)) } };
}
