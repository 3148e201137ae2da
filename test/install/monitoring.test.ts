/**
 * Issue 26: `hospital-api install --monitoring`. The real CLI writes
 * <dir>/monitoring/prometheus.yml (one job per component with metrics, on
 * loopback) and the shipped alert rules beside it, which `promtool check
 * config` accepts as they are; the native gateway then runs Kong's status
 * listener on loopback; the docker project publishes Kong's status listener
 * and the API's metrics on the host's loopback only. Without the flag nothing
 * of this exists, and a rerun keeps the choice.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { readInstallConfig, type InstallConfig } from '../../src/install-dir/install-config.js';
import { installConfig } from '../helpers/install-config.js';
import { renderCompose } from '../../src/runtime/docker/render.js';
import { monitoringFiles } from '../../src/install/monitoring.js';
import { componentSpecs } from '../../src/runtime/native/components.js';
import { runCli } from '../helpers/cli.js';
import { testPorts } from '../helpers/native-install.js';
import { portFlags } from '../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { hasPromtool, promtool } from '../monitoring/promtool.js';
import { freePort } from '../../src/util/port-check.js';
import { request } from 'undici';
import { tcpOpens } from '../helpers/tcp-opens.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { metricsTokenPath } from '../../src/install-dir/metrics-token.js';
import { installPaths } from '../../src/install-dir/layout.js';

afterAll(() => removeTempDirs());

describe('install --monitoring (native)', () => {
  it('writes a Prometheus config promtool accepts, and the gateway gets a loopback status listener; a rerun keeps it, --no-monitoring removes it', async () => {
    const dir = tempDir('install-monitoring-');
    const ports = await testPorts();
    const status = await freePort();
    const args = ['install', '--runtime', 'native', '--dir', dir, '--generate-ca', '--no-start', '--platform-url', 'https://platform.example', ...portFlags(ports)];
    const first = await runCli([...args, '--monitoring', '--gateway-status-port', String(status), '--json']);
    expect(first.exitCode, String(first.stderr)).toBe(0);

    const config = readInstallConfig(dir);
    expect([config.monitoring, config.ports.gatewayStatus]).toEqual([true, status]);
    const file = join(dir, 'monitoring', 'prometheus.yml');
    const prometheus = parse(readFileSync(file, 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }>; authorization?: { type: string; credentials_file: string } }>;
    };
    expect(prometheus.scrape_configs.map((j) => [j.job_name, j.static_configs[0]!.targets])).toEqual([
      ['hospital-api', [`127.0.0.1:${ports.metrics}`]],
      ['hospital-api-gateway', [`127.0.0.1:${status}`]],
    ]);
    // issue 45: the API's job sends the token its /metrics requires, the file the API's env names (0600)
    const tokenFile = join(dir, 'secrets', 'api-metrics-token');
    expect(prometheus.scrape_configs[0]!.authorization).toEqual({ type: 'Bearer', credentials_file: tokenFile });
    expect(readEnvFile(join(dir, 'hospital-api.env')).METRICS_TOKEN_FILE).toBe(tokenFile);
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(tokenFile, 'utf8')).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
    expect(prometheus.rule_files).toEqual([join(dir, 'monitoring', 'hospital-api-alerts.yml')]);
    expect(readFileSync(prometheus.rule_files[0]!, 'utf8')).toBe(readFileSync(new URL('../../templates/monitoring/hospital-api-alerts.yml', import.meta.url), 'utf8'));
    if (hasPromtool) {
      // check config also parses the rule files it names.
      const checked = await promtool(['check', 'config', file]);
      expect(checked.output).toContain('SUCCESS: 7 rules found');
      expect(checked.exitCode, checked.output).toBe(0);
    }

    const gateway = componentSpecs(dir, config).find((c) => c.name === 'gateway')!;
    expect(gateway.args.join(' ')).toContain(`--status-listen 127.0.0.1:${status}`);
    expect(gateway.ports).toContainEqual({ host: '127.0.0.1', port: status });

    // A rerun without the flag keeps it, and keeps the token.
    const token = readFileSync(tokenFile, 'utf8');
    expect((await runCli(args)).exitCode).toBe(0);
    expect(readFileSync(tokenFile, 'utf8')).toBe(token);
    expect(readInstallConfig(dir).monitoring).toBe(true);

    const off = await runCli([...args, '--no-monitoring']);
    expect(off.exitCode, String(off.stderr)).toBe(0);
    const offConfig = readInstallConfig(dir);
    expect(offConfig.monitoring).toBeUndefined();
    expect(componentSpecs(dir, offConfig).find((c) => c.name === 'gateway')!.args).not.toContain('--status-listen');
  });

  it('on a running stack: --monitoring opens the status listener at once (the gateway restarts, install says so), --no-monitoring closes it (issue 48)', async () => {
    const dir = tempDir('install-monitoring-running-');
    const ports = await testPorts();
    const status = await freePort();
    const args = ['install', '--runtime', 'native', '--dir', dir, '--generate-ca', '--platform-url', 'https://platform.example', ...portFlags(ports), '--gateway-status-port', String(status)];
    try {
      const first = await runCli(args);
      expect(first.exitCode, String(first.stderr)).toBe(0);
      expect(await tcpOpens('127.0.0.1', status)).toBe(false);

      const on = await runCli([...args, '--monitoring']);
      expect(on.exitCode, String(on.stderr)).toBe(0);
      expect(String(on.stderr)).toContain('install: restarting the gateway for monitoring on: its status listener opens');
      // the status listener answers the holder of the metrics token only (issue 45), as install's prometheus.yml sends it
      const stranger = await request(`http://127.0.0.1:${status}/metrics`);
      await stranger.body.dump();
      expect(stranger.statusCode).toBe(401);
      const token = readFileSync(metricsTokenPath(installPaths(dir)), 'utf8').trim();
      const metrics = await request(`http://127.0.0.1:${status}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(metrics.statusCode).toBe(200);
      const scrape = parse(readFileSync(join(dir, 'monitoring', 'prometheus.yml'), 'utf8')) as { scrape_configs: Array<{ job_name: string; authorization?: { credentials_file: string } }> };
      expect(scrape.scrape_configs.map((j) => [j.job_name, j.authorization?.credentials_file])).toEqual([
        ['hospital-api', metricsTokenPath(installPaths(dir))],
        ['hospital-api-gateway', metricsTokenPath(installPaths(dir))],
      ]);
      expect(await metrics.body.text()).toMatch(/^kong_nginx_connections_total/m);
      const listed = JSON.parse(String((await runCli(['status', '--dir', dir, '--json'])).stdout)) as { result: { components: Array<{ name: string; ports: number[] }> } };
      expect(listed.result.components.find((c) => c.name === 'gateway')!.ports).toContain(status);

      const off = await runCli([...args, '--no-monitoring']);
      expect(off.exitCode, String(off.stderr)).toBe(0);
      expect(String(off.stderr)).toContain('install: restarting the gateway for monitoring off: its status listener closes');
      expect(await tcpOpens('127.0.0.1', status)).toBe(false);
      const after = JSON.parse(String((await runCli(['status', '--dir', dir, '--json'])).stdout)) as { result: { components: Array<{ name: string; ports: number[] }> } };
      expect(after.result.components.find((c) => c.name === 'gateway')!.ports).not.toContain(status);
    } finally {
      await runCli(['down', '--dir', dir]);
    }
  }, 180_000);

  it('without --monitoring writes no monitoring folder and runs no status listener', async () => {
    const dir = tempDir('install-no-monitoring-');
    const r = await runCli(['install', '--runtime', 'native', '--dir', dir, '--generate-ca', '--no-start', ...portFlags(await testPorts())]);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(existsSync(join(dir, 'monitoring'))).toBe(false);
    expect(componentSpecs(dir, readInstallConfig(dir)).find((c) => c.name === 'gateway')!.args).not.toContain('--status-listen');
  });

  it('refuses a status port another component uses, changing nothing', async () => {
    const dir = tempDir('install-monitoring-clash-');
    const ports = await testPorts();
    const r = await runCli(['install', '--runtime', 'native', '--dir', dir, '--generate-ca', '--no-start', ...portFlags(ports), '--monitoring', '--gateway-status-port', String(ports.api)]);
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stderr)).toContain(`both use port ${ports.api}`);
    expect(existsSync(join(dir, 'install.json'))).toBe(false);
  });
});

describe('install --monitoring (docker compose project)', () => {
  const base = installConfig({ ports: { metrics: 19464, gatewayStatus: 18007 } });
  type Services = Record<string, { ports?: string[]; environment?: Record<string, string> }>;
  const services = (config: InstallConfig) => (parse(renderCompose('/srv/h', config), { merge: true }) as { services: Services }).services;

  it("publishes Kong's status listener and the API's metrics on the host's loopback only", () => {
    const s = services({ ...base, monitoring: true });
    expect(s.kong!.environment!.KONG_STATUS_LISTEN).toBe('0.0.0.0:8007');
    expect(s.kong!.ports).toContain('127.0.0.1:18007:8007');
    // HOSPITAL_API_DIR: where the API reads reports/ for its acceptance gauges (issue 46), monitoring or not
    expect(s['hospital-api']!.environment).toEqual({ HOSPITAL_API_DIR: '/srv/h', METRICS_LISTEN: '0.0.0.0:9464' });
    expect(s['hospital-api']!.ports).toContain('127.0.0.1:19464:9464');
  });

  it("the API's job sends the install's metrics token, which the runtime copies into the API's container (issue 45)", () => {
    const files = monitoringFiles('/srv/h', { ...base, monitoring: true });
    const prometheus = parse(files[0]!.text) as { scrape_configs: Array<{ job_name: string; authorization?: unknown }> };
    expect(prometheus.scrape_configs.map((j) => [j.job_name, j.authorization ?? null])).toEqual([
      ['hospital-api', { type: 'Bearer', credentials_file: join('/srv/h', 'secrets', 'api-metrics-token') }],
      ['hospital-api-gateway', null],
    ]);
  });

  it("without it keeps both inside their containers (Kong 3.6+'s default status_listen)", () => {
    const s = services(base);
    expect(s.kong!.environment!.KONG_STATUS_LISTEN).toBe('127.0.0.1:8007');
    expect(s.kong!.ports!.some((p) => p.endsWith(':8007'))).toBe(false);
    expect(s['hospital-api']!.environment).toEqual({ HOSPITAL_API_DIR: '/srv/h' });
    expect(s['hospital-api']!.ports!.some((p) => p.endsWith(':9464'))).toBe(false);
  });
});
