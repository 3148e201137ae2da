/**
 * The runtime seam: docker (production, Kong + HAPI in compose) and native
 * (embedded gateway and FHIR server as supervised processes) implement the same
 * interface, so install, verify and status run one code path for both.
 */
import type { RuntimeName } from './install-config.js';

export type { RuntimeName } from './install-config.js';

export interface ComponentState {
  /** e.g. fhir, gateway, api (native) or the compose service name (docker). */
  name: string;
  /** `up` only when the component runs and, where it has one, its health check passes. */
  state: 'up' | 'starting' | 'restarting' | 'down' | 'exited';
  detail: string;
  pid?: number;
  uptimeSeconds?: number;
  restarts?: number;
  ports?: number[];
  version?: string;
}

export interface ComponentVersion {
  name: string;
  version: string;
  /** Docker: image reference, tag and digest of the running container. */
  image?: string;
  tag?: string;
  digest?: string | null;
}

export interface AdminResponse {
  status: number;
  body: unknown;
}

export interface Runtime {
  readonly name: RuntimeName;
  /** Starts every long-running component and resolves once each answers. */
  up(options?: { demo?: boolean }): Promise<void>;
  /** Stops everything cleanly (SIGTERM, bounded wait). */
  down(): Promise<void>;
  /** Restarts one component (e.g. `api` after `consumer create --write-env`). */
  restart(component: string): Promise<void>;
  /** What is running now (verify check 1, `status`). One-shot jobs are excluded. */
  components(): Promise<ComponentState[]>;
  /** Versions for the acceptance record. */
  versions(): Promise<ComponentVersion[]>;
  /**
   * One call to the gateway's admin API from where it is reachable: inside the
   * kong container (docker) or on loopback (native). Body is JSON.
   */
  admin(method: 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<AdminResponse>;
}
