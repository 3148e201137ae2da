/**
 * Kong's plugin priorities (set in 3.0: kong/plugins/<name>/handler.lua
 * `PRIORITY`), declared once. Schemas report them (admin `GET /`), and the
 * proxy orders each route's chain by them: highest first.
 */
export const PLUGIN_PRIORITY = {
  cors: 2000,
  'key-auth': 1250,
  'basic-auth': 1100,
  'ip-restriction': 990,
  'request-size-limiting': 951,
  acl: 950,
  'rate-limiting': 910,
  prometheus: 13,
} as const satisfies Record<string, number>;

export type PluginName = keyof typeof PLUGIN_PRIORITY;
