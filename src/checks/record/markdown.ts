/** A readable copy of the record (the JSON and its signature are what count). */
import type { AcceptanceRecord } from './build.js';

const GLYPH = { pass: 'PASS', warn: 'WARN', fail: 'FAIL', skip: 'SKIP', error: 'ERROR' } as const;

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderRecordMarkdown(r: AcceptanceRecord, jsonName: string): string {
  const cert = r.gateway.certificate;
  const lines = [
    `# Acceptance record: ${r.result.toUpperCase()}${r.demo ? ' (DEMO installation)' : ''}`,
    '',
    `- Tested at (UTC): ${r.testedAt}`,
    `- Host: ${r.host}`,
    `- Toolkit: hospital-api ${r.toolkitVersion}, runtime ${r.runtime}`,
    `- Gateway: ${r.gateway.url}`,
    `- Signed copy: \`${jsonName}\` with detached signature \`${jsonName}.p7s\``,
    `- Previous record (SHA-256): ${r.previousRecordSha256 ?? 'none: the first in its folder'}`,
    '',
    '## Gateway certificate',
    '',
    ...(cert
      ? [
          `- Subject: ${cert.subject}`,
          `- Issuer: ${cert.issuer}`,
          `- Serial: ${cert.serialNumber}`,
          `- Valid: ${cert.validFrom} to ${cert.validTo}`,
          `- SHA-256: ${cert.fingerprint256}`,
        ]
      : ['- Not captured: the certificate did not verify against the CA.']),
    `- Verified against CA: ${r.ca.certificate.subject} (SHA-256 ${r.ca.certificate.fingerprint256})`,
    '',
    '## Versions',
    '',
    '| Component | Version | Image | Digest |',
    '|---|---|---|---|',
    ...r.versions.map((v) => `| ${cell(v.name)} | ${cell(v.version)} | ${cell(v.image ?? '')} | ${cell(v.digest ?? '')} |`),
    '',
    '## Checks',
    '',
    '| # | Check | Status | HTTP | Result | ms |',
    '|---|---|---|---|---|---|',
    ...r.checks.map(
      (c) => `| ${c.spec} | ${cell(c.title)} | ${GLYPH[c.status]} | ${c.httpStatus ?? ''} | ${cell(c.summary)} | ${c.durationMs} |`,
    ),
    '',
    '## Gateway',
    '',
    `- Configuration SHA-256: ${r.gatewayConfigSha256 ?? 'not read'}`,
    '',
    '| Route to the FHIR server | Service | Guards | Answered without credentials | Open |',
    '|---|---|---|---|---|',
    ...(r.gatewayRoutes ?? []).map((g) => `| ${cell(g.route)} | ${cell(g.service)} | ${cell(g.guards.join('; '))} | ${cell(g.answers.join('; '))} | ${g.open ? 'OPEN' : 'no'} |`),
    '',
    '| Not made by install | Name | Detail |',
    '|---|---|---|',
    ...(r.gatewayUndeclared ?? []).map((o) => `| ${o.kind} | ${cell(o.name)} | ${cell(o.detail)} |`),
    '',
  ];
  return lines.join('\n');
}
