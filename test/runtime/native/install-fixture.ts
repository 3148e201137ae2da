/** A minimal native install directory (install.json + env file) on ephemeral ports. */
import { writeFileSync } from 'node:fs';
import { freePort } from '../../../src/util/port-check.js';
import { INSTALL_FORMAT, writeInstallConfig, type InstallConfig } from '../../../src/install-dir/install-config.js';
import { installPaths } from '../../../src/install-dir/layout.js';

export async function makeNativeInstall(dir: string, options: { withKey?: boolean } = {}): Promise<InstallConfig> {
  const config: InstallConfig = {
    formatVersion: INSTALL_FORMAT,
    runtime: 'native',
    hosts: ['127.0.0.1', 'localhost'],
    ports: {
      api: await freePort(),
      fhir: await freePort(),
      gatewayHttp: await freePort(),
      gatewayHttps: await freePort(),
      gatewayAdmin: await freePort(),
      metrics: await freePort(),
    },
    platformApiUrl: 'http://127.0.0.1:9/platform',
    caGenerated: true,
    cors: { origins: ['*'], headers: null, exposedHeaders: null },
    toolkitVersion: '0.0.0-test',
    installedAt: new Date().toISOString(),
    demo: false,
  };
  writeInstallConfig(dir, config);
  const key = options.withKey === false ? '' : 'FHIR_API_KEY="test-key-not-secret"\n';
  writeFileSync(installPaths(dir).apiEnv, `PLATFORM_API_URL="http://127.0.0.1:9/platform"\nMETRICS_LISTEN="127.0.0.1:${config.ports.metrics}"\n${key}`, { mode: 0o600 });
  return config;
}
