/**
 * Per-route plugin chains, precomputed per snapshot. One instance per plugin
 * name runs; the most specific scope wins (Kong's kong/runloop/plugins_iterator.lua): Consumer+Route+Service
 * > Consumer+Route > Consumer+Service > Route+Service > Consumer > Route >
 * Service > Global. Consumer-scoped instances are picked once the consumer is
 * known (auth plugins run first: their priorities are higher).
 */
import type { Plugin } from '../model/types.js';
import type { PluginRunner } from '../plugins/types.js';

export interface ChainEntry {
  runner: PluginRunner;
  /** The plugin's priority (its schema's, declared in its folder). */
  priority: number;
  level: number;
  http: boolean;
  https: boolean;
}

/** One plugin name in a route's chain. */
export interface ChainSlot {
  priority: number;
  name: string;
  fixed: ChainEntry | null;
  byConsumer: Map<string, ChainEntry> | null;
}

export function scopeLevel(p: Plugin): number {
  const c = p.consumer !== null;
  const r = p.route !== null;
  const s = p.service !== null;
  if (c) return r && s ? 8 : r ? 7 : s ? 6 : 4;
  return r && s ? 5 : r ? 3 : s ? 2 : 1;
}

export interface CompiledPlugin {
  row: Plugin;
  entry: ChainEntry;
}

/** The chain for a route (or, with routeId/serviceId null, the global chain), highest priority first. */
export function buildChain(plugins: readonly CompiledPlugin[], routeId: string | null, serviceId: string | null): ChainSlot[] {
  const slots = new Map<string, ChainSlot>();
  for (const { row, entry } of plugins) {
    if (row.route !== null && row.route.id !== routeId) continue;
    if (row.service !== null && row.service.id !== serviceId) continue;
    let slot = slots.get(row.name);
    if (!slot) {
      slot = { priority: entry.priority, name: row.name, fixed: null, byConsumer: null };
      slots.set(row.name, slot);
    }
    if (row.consumer === null) {
      if (!slot.fixed || slot.fixed.level < entry.level) slot.fixed = entry;
    } else {
      slot.byConsumer ??= new Map();
      const prev = slot.byConsumer.get(row.consumer.id);
      if (!prev || prev.level < entry.level) slot.byConsumer.set(row.consumer.id, entry);
    }
  }
  return [...slots.values()].sort((a, b) => b.priority - a.priority || a.name.localeCompare(b.name));
}

/** The instance of a slot that applies to this request, or null. */
export function resolveSlot(slot: ChainSlot, consumerId: string | null, https: boolean): PluginRunner | null {
  let entry = slot.fixed;
  if (slot.byConsumer !== null && consumerId !== null) {
    const c = slot.byConsumer.get(consumerId);
    if (c && (!entry || c.level > entry.level)) entry = c;
  }
  if (!entry || !(https ? entry.https : entry.http)) return null;
  return entry.runner;
}
