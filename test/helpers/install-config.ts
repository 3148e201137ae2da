/**
 * An install.json as `install` writes it, for tests that render or read one
 * without running install: a docker site named fhir.hospital.example by
 * default; `overrides` replace fields (ports are merged over the defaults).
 */
import { DEFAULT_PORTS, INSTALL_FORMAT, type InstallConfig, type InstallPorts } from '../../src/install-dir/install-config.js';

export function installConfig(overrides: Partial<Omit<InstallConfig, 'ports'>> & { ports?: Partial<InstallPorts> } = {}): InstallConfig {
  const { ports, ...rest } = overrides;
  return {
    formatVersion: INSTALL_FORMAT,
    runtime: 'docker',
    hosts: ['fhir.hospital.example'],
    platformApiUrl: null,
    caGenerated: true,
    cors: { origins: ['*'], headers: null, exposedHeaders: null },
    toolkitVersion: '0.1.0',
    installedAt: '2026-11-21T00:00:00.000Z',
    demo: false,
    ...rest,
    ports: { ...DEFAULT_PORTS, ...ports },
  };
}
