/**
 * Where Kong and HAPI find their databases on a Swarm install: the stack's own
 * service (`kong-database`, `hapi-database`, on their labelled nodes) or the
 * hospital's server named by --kong-database-url / --fhir-database-url
 * (settings.ts keeps it as postgres://user@host:port/database, no password).
 */
import type { InstallConfig, SwarmDatabase } from '../../install-dir/install-config.js';

export interface DatabaseEndpoint {
  /** True for the stack's own database service. */
  own: boolean;
  host: string;
  port: string;
  user: string;
  database: string;
}

const OWN = { kong: { host: 'kong-database', user: 'kong', database: 'kong' }, fhir: { host: 'hapi-database', user: 'hapi', database: 'hapi' } } as const;

export function databaseOf(config: InstallConfig, which: 'kong' | 'fhir'): SwarmDatabase {
  return config.swarm?.databases[which] ?? { node: null };
}

export function databaseEndpoint(config: InstallConfig, which: 'kong' | 'fhir'): DatabaseEndpoint {
  const db = databaseOf(config, which);
  if (!('url' in db)) return { own: true, ...OWN[which], port: '5432' };
  const url = new URL(db.url);
  return {
    own: false,
    // an IPv6 address without its URL brackets
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? '5432' : url.port,
    user: decodeURIComponent(url.username),
    database: decodeURIComponent(url.pathname.slice(1)),
  };
}
