/** Helpers over the whole configuration (src/gateway/model/types.ts). */
import type { GatewayConfig } from './types.js';

/** The entity collections, in dependency order (parents before children). */
export const COLLECTIONS = [
  'ca_certificates',
  'certificates',
  'snis',
  'upstreams',
  'targets',
  'services',
  'routes',
  'consumers',
  'plugins',
  'keyauth_credentials',
  'basicauth_credentials',
  'hmacauth_credentials',
  'jwt_secrets',
  'oauth2_credentials',
  'acls',
] as const satisfies readonly (keyof GatewayConfig)[];

export type CollectionName = (typeof COLLECTIONS)[number];

export function emptyConfig(): GatewayConfig {
  return {
    services: [],
    routes: [],
    consumers: [],
    plugins: [],
    keyauth_credentials: [],
    basicauth_credentials: [],
    acls: [],
    ca_certificates: [],
    certificates: [],
    snis: [],
    upstreams: [],
    targets: [],
    hmacauth_credentials: [],
    jwt_secrets: [],
    oauth2_credentials: [],
  };
}

/** Freezes the config tree so a snapshot handed to the proxy cannot be changed under the store. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
