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
  demo: 'DEMO: install, start and verify the native stack with synthetic data, then print a curl (npm start)',
  down: 'stop the installed stack cleanly (SIGTERM, bounded wait, then SIGKILL)',
  fhir: 'run the native FHIR R4 server',
  gateway: 'run the native Kong-compatible gateway (admin API + proxy)',
  install: 'write the install directory, start the runtime and provision the gateway',
  logs: 'show the log of a component (fhir, gateway, api, platform, supervisor), or of all',
  record: 'check the signature of a test record, or compare two records',
  restore: 'restore a backup archive into an empty install directory; checks every part before writing anything',
  serve: 'run the Hospital API (POST /api/patients, GET /api/health-check)',
  status: 'show the state of the native stack: pid, uptime, version, ports and health of each component',
  systemd: 'write systemd units (one per component, hardened, logs in journald) for a native install',
  up: 'start the installed stack (native: supervised processes) and wait until each component answers',
  upgrade: 'migrate a stopped install directory made by an older release, after taking a backup',
  verify: 'run the acceptance checks and write a signed test record',
} as const;

export type CommandName = keyof typeof SUMMARIES;
