/** Human output of install and consumer create. */
import { join } from 'node:path';
import { renderTable } from '../output/table.js';
import type { InstallResult } from './run.js';

export function renderInstallResult(r: InstallResult): string {
  const lines = [`Installed (${r.runtime}) in ${r.dir}`, ''];
  if (r.provisioning.length) {
    lines.push(renderTable(['gateway object', 'kind', 'change'], r.provisioning.map((s) => [s.name, s.kind, s.fields ? `${s.change} (${s.fields.join(', ')})` : s.change])));
  } else if (!r.started) {
    lines.push('Not started (--no-start): run `hospital-api install` again without it to provision the gateway.', '');
  }
  lines.push(
    renderTable(
      ['endpoint', 'url'],
      [
        ['Hospital API', r.endpoints.apiBase],
        ['FHIR server', r.endpoints.fhirBase],
        ['gateway (key-auth)', r.endpoints.keyAuthBase],
      ],
    ),
  );
  lines.push('Next:');
  if (!r.platformApiUrlSet) lines.push(`  - set PLATFORM_API_URL in ${r.dir}/hospital-api.env`);
  if (!r.identifierSystemSet) lines.push(`  - hospital-api install --dir ${r.dir} --identifier-system <the platform's identifier system URI>`);
  lines.push(`  - hospital-api consumer create <name> --write-env --dir ${r.dir}`);
  lines.push(`  - hospital-api verify --dir ${r.dir}`);
  // Issue #12: the generated CA's private key stays on disk; say where, and that it belongs offline.
  if (r.caGenerated) lines.push(`  - move the CA private key ${join(r.dir, 'tls', 'ca.key')} offline once certificates are issued (docs/runtime.md, "The CA key")`);
  return lines.join('\n');
}
