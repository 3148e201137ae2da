import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import type { InstallFlags } from '../install/options.js';
import { addDockerOptions, addPortOptions, addSwarmOptions } from '../install/port-flags.js';
import { SUMMARIES } from './summaries.js';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `hospital-api install`: write the install directory, start the runtime, provision the gateway (issue 5) */
export function register(program: Command): void {
  const command = program
    .command('install')
    .description(SUMMARIES.install)
    .option('--runtime <name>', 'docker (one host), swarm (several hosts: docs/install.md) or native (embedded, no engine); default: docker when a Docker engine answers, else native')
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--host <name>', 'host name or address the gateway certificate names; first is used in URLs (repeatable)', collect)
    .option('--generate-ca', 'create a hospital CA and the gateway and record-signing certificates')
    .option('--ca <file>', "the hospital's CA certificate (PEM)")
    .option('--cert <file>', "the gateway's server certificate, issued by --ca")
    .option('--key <file>', "the gateway certificate's private key")
    .option('--ca-key <file>', 'with --ca: the CA key, used once to issue the record-signing and audit-seal certificates (not stored)')
    .option('--signer-cert <file>', 'with --ca: a record-signing certificate issued by the CA')
    .option('--signer-key <file>', 'the record-signing key')
    .option('--audit-seal-cert <file>', 'with --ca and no --ca-key: the audit-log seal certificate issued by the CA, subject CN "hospital-api audit seal" (without it, and without --ca-key, the audit log is not sealed)')
    .option('--audit-seal-key <file>', 'the audit-seal key (the one signing key the Hospital API holds)')
    .option('--platform-url <url>', 'PLATFORM_API_URL for the Hospital API')
    .option('--identifier-system <uri>', "PLATFORM_IDENTIFIER_SYSTEM: the platform's identifier system; a care id matches only a Patient identifier in it")
    .option('--any-identifier-system', "PLATFORM_ANY_IDENTIFIER_SYSTEM=true: a care id may match an identifier of any system (another patient's hospital number or national id too)");
  addSwarmOptions(addDockerOptions(addPortOptions(command)))
    .option('--cors-origin <origin>', 'allowed CORS origin on fhir-api (repeatable; default *)', collect)
    .option('--cors-header <name>', 'CORS allowed header (repeatable)', collect)
    .option('--cors-exposed-header <name>', 'CORS exposed header (repeatable)', collect)
    .option('--no-start', 'write the install directory only; do not start or provision')
    .option('--monitoring', 'publish the gateway status listener (Prometheus /metrics) on 127.0.0.1 and write <dir>/monitoring/prometheus.yml (docs/operations.md)')
    .option('--no-monitoring', 'stop publishing the gateway status listener')
    .option('--verify-every <duration>', 'run the acceptance checks on this interval (30s to 7d, e.g. 1h; `off` stops it): a signed record on every change, else one a day (docs/operations.md)')
    .option('--supervisor <name>', 'native: builtin (`hospital-api up`) or systemd (units in /etc/systemd/system, enabled and started); default $HOSPITAL_API_SUPERVISOR, which the Debian package sets where systemd runs, else builtin')
    .action(
      action<GlobalOptions & InstallFlags>('install', async (options, io) => {
        const { runInstall } = await import('../install/run.js');
        const { renderInstallResult } = await import('../install/render.js');
        const result = await runInstall(options, { log: (t) => io.log(t) });
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'install', result }));
        else io.out(renderInstallResult(result));
      }),
    );
}
