/** Opens the store and serves it; `close()` stops listening, then closes the database cleanly. */
import type { FastifyInstance } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { searchableTypes } from '../definitions/search-params.js';
import { openFhirStore, type SqliteFhirStore, type StoreOptions } from '../store/sqlite-store.js';
import { loadStructureDefinitions } from '../validation/validate.js';
import { buildFhirApp, type FhirLimits } from './app.js';
import type { WritePolicy } from './context.js';

export interface FhirServerOptions {
  host: string;
  port: number;
  dataDir: string;
  publicBase?: string;
  policy?: Partial<WritePolicy>;
  limits?: Partial<FhirLimits>;
  synchronous?: StoreOptions['synchronous'];
  /** Serve the full API to every address (default: loopback callers only; others get GET /fhir/metadata). */
  openApi?: boolean;
}

export interface RunningFhirServer {
  app: FastifyInstance;
  store: SqliteFhirStore;
  /** http://host:port/fhir as bound (the real port when 0 was asked for). */
  url: string;
  close(): Promise<void>;
}

export async function startFhirServer(options: FhirServerOptions): Promise<RunningFhirServer> {
  const store = openFhirStore(options.dataDir, options.synchronous ? { synchronous: options.synchronous } : {});
  searchableTypes(); // load the search parameter definitions now, not on the first request
  if (options.policy?.validate !== false) loadStructureDefinitions(); // likewise the R4 StructureDefinitions
  const app = buildFhirApp({
    store,
    ...(options.publicBase ? { publicBase: options.publicBase } : {}),
    ...(options.policy ? { policy: options.policy } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.openApi ? { fullAccess: () => true } : {}),
  });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    store.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new HospitalApiError('ERR_PORT_IN_USE', { port: options.port, host: options.host }, { cause: err });
    }
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closed = false;
  return {
    app,
    store,
    url: `http://${host}:${port}/fhir`,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      store.close();
    },
  };
}
