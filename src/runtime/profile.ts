/**
 * A runtime's profile: the facts in which the runtimes differ that code outside
 * src/runtime/ needs, install before install.json exists above all (what it
 * writes, which certificate names, where the gateway finds the FHIR server),
 * and `verify` and `backup` after. Callers ask profileOf(name) (profiles.ts)
 * and never compare runtime names themselves.
 */
import type { InstallConfig, RuntimeName } from '../install-dir/install-config.js';
import type { InstallPaths } from '../install-dir/layout.js';

/** The role every runtime runs, whatever it names the component. */
export type ComponentRole = 'api' | 'gateway' | 'fhir';

/** A path of the install directory that must be private to the service user (no group or other bits). */
export interface PrivatePath {
  path: string;
  /** Everything under it too, file by file. */
  recursive: boolean;
}

/** A folder of the install directory that only this runtime has, carried by backups under its own manifest kind. */
export interface RuntimeFolder {
  folder: string;
  kind: 'docker';
}

/** The install flags a runtime's own settings come from (`install --kong-image …`), as given. */
export type RuntimeFlags = Partial<Record<RuntimeFlag, string>>;

export type RuntimeFlag =
  | 'kongImage'
  | 'hapiImage'
  | 'postgresImage'
  | 'apiImage'
  | 'bindAddress'
  | 'fhirBindAddress'
  | 'gatewayReplicas'
  | 'fhirReplicas'
  | 'apiReplicas'
  | 'kongDatabaseNode'
  | 'fhirDatabaseNode'
  | 'kongDatabaseUrl'
  | 'fhirDatabaseUrl'
  | 'databaseCa'
  | 'overlayEncryption';

export interface RuntimeProfile {
  readonly name: RuntimeName;
  /** Whether it can run on this host: `install` without --runtime takes the first that can. */
  available(): Promise<boolean>;
  /** Whether the hospital chooses who runs the components (install --supervisor: built-in or systemd). */
  readonly supervisorChoice: boolean;
  /** The name `components()` gives the component that plays each role. */
  readonly componentNames: Readonly<Record<ComponentRole, string>>;
  /** Names the gateway certificate carries besides the hospital's own hosts. */
  readonly certificateHosts: readonly string[];
  /** Of those, the ones a certificate the hospital brings must name too, and why. */
  readonly requiredHosts: ReadonlyArray<{ name: string; why: string }>;
  /** The runtime flags it takes: install refuses any other one given (ERR_USAGE naming the runtime) before it writes anything. */
  readonly installFlags: readonly RuntimeFlag[];
  /** What install records in install.json for this runtime alone (docker: images and bind addresses). */
  installSettings(hosts: string[], previous: InstallConfig | null, flags: RuntimeFlags): Promise<Partial<InstallConfig>>;
  /**
   * The settings install manages in hospital-api.env: how the API reaches the gateway, its CA and audit log
   * and the key that seals it (issue 46), and where a runtime can give it one, the token its /metrics
   * requires (METRICS_TOKEN_FILE, issue 45).
   */
  apiEnv(paths: InstallPaths, config: InstallConfig): {
    FHIR_BASE_URL: string;
    FHIR_CA_FILE: string;
    AUDIT_LOG: string;
    AUDIT_SEAL_CERT_FILE?: string;
    AUDIT_SEAL_KEY_FILE?: string;
    METRICS_TOKEN_FILE?: string;
  };
  /**
   * Where the API's audit log is on this host (the file its AUDIT_LOG names, seen from outside a
   * container); null when it is not on this host (swarm: each node that runs an API task keeps its own).
   */
  auditLogFile(paths: InstallPaths, config: InstallConfig): string | null;
  /** Where the audit log of the install directory `dir` is when auditLogFile is null (shown by `audit verify`). */
  auditLogElsewhere?(dir: string): Promise<string>;
  /** The folders install makes 0700, in that order. */
  privateFolders(paths: InstallPaths): string[];
  /** Generated secrets, file name under secrets/ → content; an existing one is kept. */
  secrets(paths: InstallPaths): Record<string, string>;
  /** Files of the install directory rendered from install.json after the common ones (docker: the compose project). Throws before anything is written. */
  renderFiles(dir: string, config: InstallConfig): Promise<Array<{ path: string; text: string }>>;
  /**
   * What the runtime needs fetched before install writes anything (docker: Compose found, every image
   * present or pulled), so a failure leaves the directory as it was. Progress lines go to `log`.
   */
  prepare(config: InstallConfig, log: (line: string) => void): Promise<void>;
  /** Folders only this runtime has, for backups. */
  readonly folders: readonly RuntimeFolder[];
  /** Where the gateway's services send FHIR requests. */
  fhirUpstream(config: InstallConfig): string;
  /** DEMO ONLY: where a demo install's API finds the platform stand-in listening on `port` (PLATFORM_API_URL). */
  demoPlatformUrl(port: number): string;
  /**
   * The FHIR base URL as this host reaches it directly (the spec's `{fhir_url}`):
   * where the FHIR port is actually published, so check 4.5.2 reads
   * /fhir/metadata there and install's endpoint table prints it (issue 27).
   */
  fhirBaseOnHost(config: InstallConfig): string;
  /**
   * What a client on this host sends with every request for the full FHIR API at fhirBaseOnHost
   * (native: nothing, the FHIR server knows its own user; docker: the FHIR door's token as
   * `Authorization: Bearer`). A secret: never logged. GET /fhir/metadata needs none of it.
   */
  fhirClientHeaders(paths: InstallPaths): Record<string, string>;
  /**
   * The address on this host at which the Hospital API's port and the gateway's HTTPS port answer
   * (an IP, no brackets): where day-two commands (`consumer rotate-key`, `cert renew`) probe them.
   * Native and swarm: loopback (native binds 127.0.0.1 or every address; swarm's routing mesh
   * publishes on every address). Docker: the address they are published on (`--bind-address`),
   * loopback when that is every address (issue 48: a site bound to its LAN address only).
   */
  publishedAddress(config: InstallConfig): string;
  /**
   * The token file the gateway's status listener requires (issue 45), which install's Prometheus
   * configuration sends; null where the gateway is Kong, whose status listener takes no credential.
   */
  gatewayStatusTokenFile(paths: InstallPaths): string | null;
  /**
   * Whether `install --verify-every` can run here (issue 46): native runs it under its supervisor or
   * a systemd timer, docker as two compose services (runtime/docker/acceptance.ts). Where it cannot,
   * `scheduledAcceptanceRefusal` says why and what to run instead; install refuses the flag with it.
   */
  readonly scheduledAcceptance: boolean;
  readonly scheduledAcceptanceRefusal?: string;
  /** True when the gateway's plain HTTP proxy port is reachable from this host (verify probes routes there too, issue 23). */
  readonly gatewayHttpOnHost: boolean;
  /**
   * Components that open or close their metrics listeners only when they start: install restarts
   * them when `--monitoring` / `--no-monitoring` changes the choice on a running stack (issue 48).
   */
  readonly restartForMonitoring: readonly ComponentRole[];
  /** Components that read a new gateway certificate only when they start: install restarts them after replacing it. */
  readonly restartForNewCertificate: readonly ComponentRole[];
  /** What verify's file-permissions check holds private, in the order it reports, and what it says. */
  privacy(paths: InstallPaths): { paths: PrivatePath[]; summary: string; hint: string };
}
