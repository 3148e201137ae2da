/** Issue #12: after --generate-ca, install says where the CA private key is and that it belongs offline. */
import { describe, expect, it } from 'vitest';
import { renderInstallResult } from '../../src/install/render.js';
import type { InstallResult } from '../../src/install/run.js';

const base: Omit<InstallResult, 'caGenerated'> = {
  dir: '/srv/hospital-api', runtime: 'native', started: false, files: [], provisioning: [], platformApiUrlSet: true, identifierSystemSet: true,
  endpoints: {} as InstallResult['endpoints'],
};

describe('install output', () => {
  it('names the generated CA key and says to move it offline', () => {
    const text = renderInstallResult({ ...base, caGenerated: true });
    expect(text).toContain('move the CA private key /srv/hospital-api/tls/ca.key offline');
  });
  it('says nothing of a CA key the hospital kept (its own CA)', () => {
    expect(renderInstallResult({ ...base, caGenerated: false })).not.toContain('ca.key');
  });
});
