/**
 * `install --monitoring`: what a site's Prometheus needs, in <dir>/monitoring/:
 * prometheus.yml with one scrape job per component that has metrics (the
 * Hospital API's metrics listener, the gateway's status listener, both on
 * this host's loopback) and the shipped alert rules beside it
 * (templates/monitoring/). The FHIR server has no /metrics (native nor HAPI).
 * The API's job sends the token its /metrics requires (issue 45), on the runtimes that give it one.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { gatewayStatusPort, type InstallConfig } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import { profileOf } from '../runtime/profiles.js';
import { metricsTokenPath } from '../install-dir/metrics-token.js';
import { PROJECT_ROOT } from '../version.js';

export const MONITORING_TEMPLATES = join(PROJECT_ROOT, 'templates', 'monitoring');
export const ALERT_RULES_FILE = 'hospital-api-alerts.yml';

/** The files `install --monitoring` writes (none without it). */
export function monitoringFiles(dir: string, config: InstallConfig): Array<{ path: string; text: string }> {
  const status = gatewayStatusPort(config);
  if (status === null) return [];
  const folder = join(installPaths(dir).root, 'monitoring');
  const rules = join(folder, ALERT_RULES_FILE);
  // where the runtime gives the API a token (native; docker copies it into the container), Prometheus on this
  // host reads the install's own file
  const paths = installPaths(dir);
  const tokenFile = profileOf(config.runtime).apiEnv(paths, config).METRICS_TOKEN_FILE ? metricsTokenPath(paths) : undefined;
  const gatewayToken = profileOf(config.runtime).gatewayStatusTokenFile(paths);
  const scrape = {
    global: { scrape_interval: '30s', evaluation_interval: '30s' },
    rule_files: [rules],
    scrape_configs: [
      {
        job_name: 'hospital-api',
        // issue 45: the API's /metrics answers only the holder of its token (the file install wrote, 0600: run
        // Prometheus as the service's user, or give it a copy it may read; docs/operations.md "Monitoring")
        ...(tokenFile ? { authorization: { type: 'Bearer', credentials_file: tokenFile } } : {}),
        static_configs: [{ targets: [`127.0.0.1:${config.ports.metrics}`] }],
      },
      {
        job_name: 'hospital-api-gateway',
        // the native gateway's status listener requires the same token; Kong's takes none
        ...(gatewayToken ? { authorization: { type: 'Bearer', credentials_file: gatewayToken } } : {}),
        static_configs: [{ targets: [`127.0.0.1:${status}`] }],
      },
    ],
  };
  const header = [
    '# Prometheus configuration for this hospital-api site, written by `hospital-api install --monitoring`.',
    '# Use it as prometheus.yml, or copy its rule_files entry and two scrape jobs into yours',
    '# (docs/operations.md "Monitoring"). Both targets listen on this host\'s loopback only.',
    '',
  ].join('\n');
  return [
    { path: join(folder, 'prometheus.yml'), text: header + stringify(scrape) },
    { path: rules, text: readFileSync(join(MONITORING_TEMPLATES, ALERT_RULES_FILE), 'utf8') },
  ];
}
