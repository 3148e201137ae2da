/**
 * ip-restriction (Kong's kong/plugins/ip-restriction/handler.lua): deny is checked first, then allow; rejection
 * 403 "IP address not allowed: <ip>" unless status/message are configured.
 */
import type { BlockList } from 'node:net';
import { blockListOf, parseIpOrCidr, type IpRange } from '../../../util/ip-list.js';
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner } from '../types.js';
import type { IpRestrictionConfig } from './schema.js';

function blockList(entries: string[] | null): BlockList | null {
  if (!entries || entries.length === 0) return null;
  // The schema has rejected anything that does not parse.
  return blockListOf(entries.map(parseIpOrCidr).filter((r): r is IpRange => r !== null));
}

function compile(raw: Readonly<Record<string, unknown>>, _env: CompileEnv): PluginRunner {
  const conf = raw as unknown as IpRestrictionConfig;
  const deny = blockList(conf.deny);
  const allow = blockList(conf.allow);
  const status = conf.status ?? 403;
  return {
    name: 'ip-restriction',
    access(state): AccessResult {
      const ip = state.clientIp;
      const family = ip.includes(':') ? 'ipv6' : 'ipv4';
      const blocked = (deny !== null && deny.check(ip, family)) || (allow !== null && !allow.check(ip, family));
      if (blocked) return { status, message: conf.message ?? `IP address not allowed: ${ip}` };
    },
  };
}

export const ipRestrictionHandler: PluginHandler = { name: 'ip-restriction', compile };
