/**
 * The one-line summary of each top-level command, in one place: the command modules use
 * it for their description, and cli.ts lists every command in `--help` from it without
 * loading the modules (only the command being run is loaded).
 */
export const SUMMARIES = {
  audit: "the Hospital API's audit log: prove it whole, chained and sealed (audit verify); who received a patient's data (audit disclosures)",
  backup: 'write one encrypted archive of the FHIR data, gateway state, configuration and TLS material, while the stack serves',
  cert: "the installation's certificates: days left, renewal without downtime",
  consumer: 'manage the hospital gateway consumer',
  demo: 'DEMO: install, start and verify a stack (native by default, or --runtime docker) with synthetic data, then print a curl (npm start)',
  down: 'stop the installed stack cleanly, whatever its runtime (native: SIGTERM, bounded wait, then SIGKILL; docker, swarm: its containers or services)',
  fhir: 'run the native FHIR R4 server',
  gateway: 'run the native Kong-compatible gateway (admin API + proxy)',
  install: 'write the install directory, start the runtime and provision the gateway',
  logs: 'show the log of a component (by its name in `status`, or its role: api, gateway, fhir), or of all, whatever the runtime',
  record: 'check the signature of a test record, or compare two records',
  restore: 'restore a backup archive into an empty install directory; checks every part before writing anything',
  serve: 'run the Hospital API (POST /api/patients, GET /api/health-check)',
  status: 'show the state of the installed stack, whatever its runtime: each component\'s state, uptime, version, ports and health',
  systemd: 'write systemd units (one per component, hardened, logs in journald) for a native install',
  up: 'start the installed stack (native: supervised processes; docker: the compose project; swarm: the stack) and wait until each component answers',
  upgrade: 'migrate a stopped install directory made by an older release, after taking a backup',
  verify: 'run the acceptance checks and write a signed test record',
} as const;

export type CommandName = keyof typeof SUMMARIES;
