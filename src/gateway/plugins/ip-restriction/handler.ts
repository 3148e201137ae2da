/**
 * ip-restriction (kong.md §2): deny is checked first, then allow; rejection
 * 403 "IP address not allowed: <ip>" unless status/message are configured.
 */
import { BlockList } from 'node:net';
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner } from '../types.js';
import { parseIpOrCidr, type IpRestrictionConfig } from './schema.js';

function blockList(entries: string[] | null): BlockList | null {
  if (!entries || entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const p = parseIpOrCidr(entry);
    if (p) list.addSubnet(p.ip, p.prefix, p.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

function compile(raw: Readonly<Record<string, unknown>>, _env: CompileEnv): PluginRunner {
  const conf = raw as unknown as IpRestrictionConfig;
  const deny = blockList(conf.deny);
  const allow = blockList(conf.allow);
  const status = conf.status ?? 403;
  return {
    name: 'ip-restriction',
    priority: 990,
    access(state): AccessResult {
      const ip = state.clientIp;
      const family = ip.includes(':') ? 'ipv6' : 'ipv4';
      const blocked = (deny !== null && deny.check(ip, family)) || (allow !== null && !allow.check(ip, family));
      if (blocked) return { status, message: conf.message ?? `IP address not allowed: ${ip}` };
    },
  };
}

export const ipRestrictionHandler: PluginHandler = { name: 'ip-restriction', priority: 990, compile };
