/**
 * The runtime seam: docker (production, Kong + HAPI in compose) and native
 * (embedded gateway and FHIR server as supervised processes) implement the same
 * interface, so install, verify and status run one code path for both.
 */
import type { RuntimeName } from '../install-dir/install-config.js';

export type { RuntimeName } from '../install-dir/install-config.js';

export interface ComponentState {
  /** e.g. fhir, gateway, api (native) or the compose service name (docker). */
  name: string;
  /**
   * `up` only when the component runs and, where it has one, its health check passes;
   * `degraded` when it runs and answers but reports a fault it works around (the
   * gateway serving its last good configuration: `detail` says why).
   */
  state: 'up' | 'degraded' | 'starting' | 'restarting' | 'down' | 'exited';
  detail: string;
  pid?: number;
  uptimeSeconds?: number;
  restarts?: number;
  ports?: number[];
  version?: string;
  /** Docker: the image the container runs, without its tag (the tag is `version`). */
  image?: string;
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

/** What the Hospital API reported after rereading its key (src/api/fhir/key-reload.ts). */
export interface ApiKeyReload {
  /** First 16 hex digits of SHA-256 of the key it now uses (never the key). */
  keyFingerprint: string;
  /** `ok` when the gateway accepted that key, else an error code. */
  gateway: string;
  error?: string;
  /** SHA-256 fingerprint of the CA the API now trusts for the gateway (first of FHIR_CA_FILE); null for the system store. */
  caFingerprint?: string | null;
}

/** What a certificate reload did, for the renewal's log. */
export interface GatewayTlsReload {
  /** What became of the connections open before it, e.g. `open connections were kept`. */
  connections: string;
}

/** A reload in the gateway's own processes (native SIGHUP, `kong reload`): old workers finish their connections. */
export const TLS_RELOADED_IN_PLACE: GatewayTlsReload = Object.freeze({ connections: 'open connections were kept' });

/** One file of live data copied by snapshotData (path relative to the snapshot directory). */
export interface DataPart {
  path: string;
  /**
   * What it is, for the backup manifest: native's SQLite FHIR store and gateway
   * state file, or docker's pg_dump archives of HAPI's and Kong's databases.
   */
  kind: 'fhir-store' | 'gateway-state' | 'fhir-database' | 'gateway-database';
}

/** What the gateway's own resolver makes of one host name (issue 43): its addresses, or why there are none. */
export type HostResolution = { addresses: string[] } | { error: string };

/**
 * One place where the FHIR server, or a component that forwards to it (docker: the FHIR door), answers
 * the gateway: a port and the address ranges (`ip/prefix`) it answers on as the gateway reaches them. A
 * wildcard listener answers on every address of its host.
 */
export interface FhirListener {
  /** e.g. `FHIR server`, `FHIR door (published)`. */
  name: string;
  port: number;
  ranges: string[];
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
  /**
   * Issue 43: the addresses each of `hosts` resolves to where the gateway resolves it (native: this
   * host's resolver, which the gateway's own connections use: hosts file, DNS, numeric forms; docker:
   * inside the kong container), so acceptance judges where a service's traffic really goes.
   */
  gatewayResolve(hosts: readonly string[]): Promise<Map<string, HostResolution>>;
  /** Issue 43: every address and port where the FHIR server answers the gateway (read from what runs). */
  fhirListeners(): Promise<FhirListener[]>;
  // Day two (issue 15).
  /**
   * The Hospital API rereads FHIR_API_KEY from its settings
   * without a restart or a dropped request, checks the gateway accepts it, and
   * reports which key it now uses.
   */
  reloadApiKey(): Promise<ApiKeyReload>;
  /**
   * The gateway loads <dir>/tls/gateway.{pem,key} again for new connections; resolves once every
   * gateway process or task that serves new connections has them, saying what became of open ones.
   */
  reloadGatewayTls(): Promise<GatewayTlsReload>;
  /**
   * Copies the live data (FHIR store, gateway state) into `into` while the
   * stack serves (native: SQLite's online backup), consistent per part.
   */
  snapshotData(into: string, progress: (text: string) => void): Promise<DataPart[]>;
  /** Puts data parts made by snapshotData back; the stack is not running. */
  restoreData(from: string, parts: DataPart[]): Promise<void>;
  /**
   * The components' own logs (`hospital-api logs`): the last `lines` of one
   * component's log, or of each, then with `follow` what is appended until
   * `signal` aborts. A runtime whose logs live elsewhere says where (ERR_USAGE).
   */
  logs(options: LogsOptions): Promise<void>;
  /** Who supervises the components now, for `status`. */
  supervision(): Promise<Supervision>;
  /**
   * Where the gateway's HTTPS port is published when the gateway runs on several hosts (swarm:
   * each node running a gateway task, its port in host mode there). A one-host runtime has none:
   * its gateway is at the site's own address, which verify probes anyway.
   */
  gatewayNodes?(): Promise<GatewayNode[]>;
  /**
   * How long a change through admin() may take to be served by every gateway proxy (swarm: each
   * proxy reads the database every KONG_DB_UPDATE_FREQUENCY s). Absent: at once (one gateway
   * process that admin() itself changes).
   */
  readonly gatewayPropagationMs?: number;
  /**
   * Runs this runtime's own supervisor in this process until it is stopped
   * (`up --foreground`, started detached by `up`); resolves to its exit code.
   */
  supervise(): Promise<number>;
}

/** A host that publishes the gateway: its name in the cluster and the address other hosts reach it at. */
export interface GatewayNode {
  node: string;
  /** Null when the cluster reports none: such a host cannot be probed, and every check of it fails (fail closed). */
  address: string | null;
}

/** The name `hospital-api logs` gives the Hospital API's audit log, beside the components (both runtimes). */
export const AUDIT_LOG_COMPONENT = 'audit';

export interface LogsOptions {
  /** One component; every one when absent. */
  component?: string;
  lines: number;
  follow: boolean;
  signal: AbortSignal;
  write(component: string, text: string): void;
}

export interface Supervision {
  /** The supervisor process the runtime started, when one runs. */
  supervisor: { pid: number; startedAt: string } | null;
  /** One line for `status` saying who runs the components; null when the container engine does. */
  summary: string | null;
}

/**
 * The processes a runtime recorded starting in an install directory, read without install.json:
 * `down` stops them when install.json is damaged or missing, and `upgrade` refuses to run while
 * they run (index.ts recordedStack).
 */
export interface RecordedStack {
  runtime: RuntimeName;
  /** The file that records the processes. */
  file: string;
  /** Whether the supervisor that recorded them still runs. */
  running(): boolean;
  /** Stops them; resolves to whether anything was running. */
  stop(): Promise<boolean>;
}

/** A service unit file `hospital-api systemd` writes: its file name and text. */
export interface ServiceUnit {
  name: string;
  text: string;
}
