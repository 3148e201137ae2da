/**
 * acl (Kong's kong/plugins/acl/handler.lua): needs an authenticated (or anonymous) consumer, 401
 * otherwise; 403 "You cannot consume this service" when not allowed or denied;
 * X-Consumer-Groups upstream unless hide_groups_header.
 */
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner } from '../types.js';
import type { AclConfig } from './schema.js';

const FORBIDDEN = { status: 403, message: 'You cannot consume this service' };

function compile(raw: Readonly<Record<string, unknown>>, env: CompileEnv): PluginRunner {
  const conf = raw as unknown as AclConfig;
  const allow = conf.allow ? new Set(conf.allow) : null;
  const deny = conf.deny ? new Set(conf.deny) : null;
  return {
    name: 'acl',
    access(state): AccessResult {
      if (!state.consumer) return { status: 401, message: 'Unauthorized' };
      const groups = env.groupsByConsumer.get(state.consumer.id) ?? [];
      if (allow && !groups.some((g) => allow.has(g))) return FORBIDDEN;
      if (deny && groups.some((g) => deny.has(g))) return FORBIDDEN;
      if (!conf.hide_groups_header && groups.length) state.setUpstreamHeader('x-consumer-groups', groups.join(', '));
    },
  };
}

export const aclHandler: PluginHandler = { name: 'acl', compile };
