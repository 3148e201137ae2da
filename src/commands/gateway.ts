import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { readTokenFile } from '../util/token-file.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { parseIpOrCidr } from '../util/ip-list.js';
import { isLoopback, parseListen, type ListenAddress } from '../util/listen-address.js';
import { VERSION } from '../version.js';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import type { ExportFormat } from '../gateway/declarative/index.js';
import { writeSecretFile } from '../util/atomic-write.js';

interface GatewayFlags extends GlobalOptions {
  adminListen: string;
  proxyListen: string;
  proxySslListen?: string;
  statusListen: string;
  cert?: string;
  key?: string;
  state?: string;
  followState?: boolean;
  trustedIps?: string;
  headers?: string;
  proxyAddHeader?: string;
  statusTokenFile?: string;
  sslCipherSuite?: string;
  sslCiphers?: string;
  sslProtocols?: string;
  sslPreferServerCiphers?: string;
}

interface ExportFlags extends GlobalOptions {
  state?: string;
  dir?: string;
  output?: string;
  format: string;
}

function listen(value: string, name: string): ListenAddress | null {
  return value === 'off' ? null : parseListen(value, name);
}

function statePath(flag: string | undefined): string {
  return flag ?? installPaths(defaultInstallDir()).gatewayState;
}

function trustedIps(value: string | undefined): string | null {
  if (value === undefined) return null;
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (entry !== 'off' && !parseIpOrCidr(entry)) throw new HospitalApiError('ERR_USAGE', { detail: `--trusted-ips: "${entry}" is not an IP address or CIDR range` });
  }
  return value;
}

/**
 * Kong's `headers` (kong.conf.default): `off`, or a comma list; only whether the
 * server tokens (Server / Via naming kong/x.y.z) are sent is honoured here.
 */
/** --status-token-file: the token, read as the API reads METRICS_TOKEN_FILE (util/token-file.ts). @throws ERR_USAGE */
function statusToken(file: string | undefined): string | null {
  if (file === undefined) return null;
  try {
    return readTokenFile(file);
  } catch (err) {
    throw new HospitalApiError('ERR_USAGE', { detail: `--status-token-file: ${(err as Error).message}` });
  }
}

function serverTokens(value: string | undefined): boolean {
  if (value === undefined) return true;
  const list = value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  if (list.length === 0) throw new HospitalApiError('ERR_USAGE', { detail: '--headers needs off or a comma list (e.g. server_tokens,latency_tokens)' });
  return !list.includes('off') && list.some((h) => h === 'server_tokens' || h === 'server' || h === 'via');
}

/** Resolves on the first SIGTERM/SIGINT. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string) => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
      resolve(signal);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/** `hospital-api gateway`: run the native Kong-compatible gateway (docs/gateway-proxy.md). */
export function register(program: Command): void {
  const gateway = program
    .command('gateway')
    .description(SUMMARIES.gateway)
    .option('--admin-listen <host:port|off>', 'admin API address (loopback unless named explicitly)', '127.0.0.1:8001')
    .option('--proxy-listen <host:port|off>', 'HTTP proxy address', '0.0.0.0:8000')
    .option('--proxy-ssl-listen <host:port|off>', 'HTTPS proxy address (default 0.0.0.0:8443 when --cert/--key are given, else off)')
    .option('--status-listen <host:port|off>', "Kong's status_listen: GET /metrics for Prometheus (loopback unless named explicitly)", 'off')
    .option('--cert <file>', 'PEM server certificate for the HTTPS proxy')
    .option('--key <file>', 'PEM private key for the HTTPS proxy')
    .option('--state <file>', 'configuration state file (default <install dir>/gateway/state.json)')
    .option('--follow-state', 'serve each new version of the state file another process writes there (a bad one keeps the last good configuration)')
    .option('--headers <list>', "Kong's headers: off, or a list; without server_tokens no Server/Via names kong/x.y.z (default: on)")
    .option('--status-token-file <file>', 'the status listener answers only `Authorization: Bearer <the token in file>` (0600 or 0640; not in Kong: install --monitoring sets it on native)')
    .option('--proxy-add-header <directive>', 'Kong\'s nginx_proxy_add_header: `<name> "<value>" [always]` on the proxy ports\' answers (install: HSTS); default: $KONG_NGINX_PROXY_ADD_HEADER, else none')
    .option('--trusted-ips <list>', "Kong's trusted_ips: comma-separated IPs/CIDRs whose X-Forwarded-* and X-Real-IP are believed (default: none)")
    .option('--ssl-cipher-suite <name>', "Kong's ssl_cipher_suite: modern, intermediate, old, fips or custom (default: KONG_SSL_CIPHER_SUITE, else intermediate)")
    .option('--ssl-ciphers <list>', "Kong's ssl_ciphers, an OpenSSL cipher list; with custom only (default: KONG_SSL_CIPHERS)")
    .option('--ssl-protocols <list>', 'Kong\'s ssl_protocols, e.g. "TLSv1.2 TLSv1.3"; with custom only (default: KONG_SSL_PROTOCOLS)')
    .option('--ssl-prefer-server-ciphers <on|off>', "Kong's ssl_prefer_server_ciphers; with custom only (default: KONG_SSL_PREFER_SERVER_CIPHERS, else on)")
    .action(
      action<GatewayFlags>('gateway', async (flags, io) => {
        const server = await import('../gateway/server.js');
        const { kongTlsSettingsFromEnv } = await import('../gateway/proxy/tls-settings.js');
        const { parseProxyAddHeader } = await import('../gateway/proxy/proxy-add-header.js');
        // Kong's KONG_SSL_* variables (kong/conf_loader: the environment overrides kong.conf); a flag overrides its variable
        const fromEnv = kongTlsSettingsFromEnv(process.env);
        const tls = {
          ...fromEnv,
          ...(flags.sslCipherSuite !== undefined ? { sslCipherSuite: flags.sslCipherSuite } : {}),
          ...(flags.sslCiphers !== undefined ? { sslCiphers: flags.sslCiphers } : {}),
          ...(flags.sslProtocols !== undefined ? { sslProtocols: flags.sslProtocols } : {}),
          ...(flags.sslPreferServerCiphers !== undefined ? { sslPreferServerCiphers: flags.sslPreferServerCiphers } : {}),
        };
        const admin = listen(flags.adminListen, '--admin-listen');
        const sslDefault = flags.cert && flags.key ? '0.0.0.0:8443' : 'off';
        const running = await server.runGateway({
          admin,
          proxy: listen(flags.proxyListen, '--proxy-listen'),
          proxySsl: listen(flags.proxySslListen ?? sslDefault, '--proxy-ssl-listen'),
          status: listen(flags.statusListen, '--status-listen'),
          certPath: flags.cert ?? null,
          keyPath: flags.key ?? null,
          statePath: statePath(flags.state),
          followState: flags.followState === true,
          trustedIps: trustedIps(flags.trustedIps),
          serverTokens: serverTokens(flags.headers),
          statusToken: statusToken(flags.statusTokenFile),
          proxyAddHeaders: parseProxyAddHeader(flags.proxyAddHeader ?? process.env.KONG_NGINX_PROXY_ADD_HEADER ?? ''),
          tls,
          version: VERSION,
        });
        if (admin && !isLoopback(admin.host)) {
          io.warn(`--admin-listen ${admin.host} is not loopback: the admin API (no authentication) is reachable from the network`);
        }
        if (tls.sslCipherSuite !== undefined && tls.sslCipherSuite.trim() !== 'intermediate') {
          io.warn(`ssl_cipher_suite ${tls.sslCipherSuite.trim()}: not Mozilla's intermediate profile; \`hospital-api verify\` checks what the proxy negotiates (tls-policy)`);
        }
        // One line, always printed: tests and supervisors parse it for the bound ports.
        process.stderr.write(
          `hospital-api gateway ready: admin=${running.admin ?? 'off'} proxy=${running.proxy ?? 'off'} proxy-ssl=${running.proxySsl ?? 'off'} status=${running.status ?? 'off'}\n`,
        );
        const signal = await untilSignal();
        io.log(`hospital-api gateway: ${signal}, closing`);
        await running.close();
        return 0;
      }),
    );

  gateway
    .command('export')
    .description('write the current configuration as a Kong declarative document (YAML)')
    .option('--state <file>', 'configuration state file (default <install dir>/gateway/state.json)')
    .option('--dir <dir>', "installation whose running gateway to export, read through its admin API (any runtime; not with --state)")
    .option('--output <file>', 'write here (mode 0600: it holds keys) instead of stdout')
    .option(
      '--format <deck|kong>',
      "deck: what decK 1.4.0 and later accept (no _transform, no service enabled; a disabled service is refused); kong: Kong's own export (_transform: false, enabled)",
      'deck',
    )
    .action(
      action<ExportFlags>('gateway export', async (flags, io) => {
        const { loadSnapshotFromFile } = await import('../gateway/store/index.js');
        const { EXPORT_FORMATS, exportDeclarative, kongHashedCredentials } = await import('../gateway/declarative/index.js');
        const { stringify } = await import('yaml');
        if (!(EXPORT_FORMATS as readonly string[]).includes(flags.format)) {
          throw new HospitalApiError('ERR_USAGE', { detail: `--format: "${flags.format}" is not one of ${EXPORT_FORMATS.join(', ')}` });
        }
        const format = flags.format as ExportFormat;
        if (flags.dir !== undefined && flags.state !== undefined) throw new HospitalApiError('ERR_USAGE', { detail: 'give --dir (a running installation) or --state (a state file), not both' });
        const config =
          flags.dir !== undefined
            ? await (await import('../runtime/gateway-config.js')).configFromInstall(flags.dir)
            : loadSnapshotFromFile(statePath(flags.state)).config;
        const yaml = stringify(exportDeclarative(config, format));
        const kongHashes = format === 'deck' ? kongHashedCredentials(config) : [];
        if (kongHashes.length > 0) {
          io.warn(
            `basic-auth ${kongHashes.join(', ')}: Kong SHA-1 password hashes are hashed again when this file is loaded (it has no _transform: false); export with --format kong to keep them`,
          );
        }
        if (flags.output) {
          writeSecretFile(flags.output, yaml);
          io.log(`hospital-api gateway export: wrote ${flags.output}`);
        } else {
          io.out(yaml);
        }
        return 0;
      }),
    );
}
