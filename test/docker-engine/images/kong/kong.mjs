#!/usr/local/bin/node
// `kong` for the stand-in image: the subcommands the hospital-api compose file
// and install use, with the KONG_* settings they set (Kong's kong.conf.default
// names), running the project's native gateway (`hospital-api gateway`).
//   kong docker-start | start     run the gateway in the foreground
//   kong health                   exit 0 when the gateway answers, as Kong's does
//   kong reload                   as Kong's (kong/cmd/reload.lua): signal the running gateway
//                                 (nginx HUP: new workers with the certificate files read again,
//                                 old ones finish their connections); fails when none runs
//   kong migrations bootstrap|up|finish
//   kong version
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { psql, restoreBlob, saveBlob } from './pg-blob.mjs';

const VERSION = '3.9.3';
const env = process.env;
const [cmd, sub] = process.argv.slice(2);

/** Kong's prefix (KONG_PREFIX, default /usr/local/kong) holds pids/nginx.pid; the stand-in's lives under /tmp. */
const PID_FILE = join(env.KONG_PREFIX ?? join(tmpdir(), 'kong-standin'), 'pids', 'nginx.pid');

function die(msg) {
  process.stderr.write(`Error: ${msg}\n`);
  process.exit(1);
}

function conn() {
  if ((env.KONG_DATABASE ?? 'postgres') !== 'postgres') die('the stand-in supports KONG_DATABASE=postgres only');
  if (!env.KONG_PG_PASSWORD) die('KONG_PG_PASSWORD is not set');
  return { host: env.KONG_PG_HOST ?? '127.0.0.1', port: Number(env.KONG_PG_PORT ?? 5432), user: env.KONG_PG_USER ?? 'kong', password: env.KONG_PG_PASSWORD, database: env.KONG_PG_DATABASE ?? 'kong' };
}

function bootstrapped(c) {
  return psql(c, "SELECT to_regclass('public.schema_meta') IS NOT NULL").trim() === 't';
}

/** "0.0.0.0:8000, 0.0.0.0:8443 ssl" → { plain, ssl } (Kong's proxy_listen syntax, flags after the address). */
function parseListen(value) {
  const out = { plain: 'off', ssl: 'off' };
  if (!value || value.trim() === 'off') return out;
  for (const part of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const [addr, ...flags] = part.split(/\s+/);
    if (flags.includes('ssl')) out.ssl = addr;
    else out.plain = addr;
  }
  return out;
}

/** Kong accepts a path, PEM text or base64 PEM for ssl_cert / ssl_cert_key (conf_loader/parse.lua). */
function pemOf(value) {
  if (value.includes('-----BEGIN')) return value;
  if (existsSync(value)) return null;
  return Buffer.from(value, 'base64').toString('utf8');
}

async function start() {
  // The tier's slow variant (STANDIN_START_DELAY_S, set in a derived image): a gateway that takes its
  // time before it listens, so install's waits and the watchdog are tried against a slow start.
  const delay = Number(env.STANDIN_START_DELAY_S ?? 0);
  if (delay > 0) {
    process.stderr.write(`kong stand-in: starting slowly (${delay} s)\n`);
    await new Promise((resolve) => setTimeout(resolve, delay * 1000));
  }
  const c = conn();
  if (!bootstrapped(c)) die('Database needs bootstrapping or is older than Kong 1.0.\n\nTo start a new installation from scratch, run \'kong migrations bootstrap\'.');
  const run = mkdtempSync(join(tmpdir(), 'kong-'));
  const state = join(run, 'state.json');
  restoreBlob(c, 'kong-state', state);
  const args = ['/app/bin/hospital-api.js', 'gateway', '--state', state];
  const proxy = parseListen(env.KONG_PROXY_LISTEN ?? '0.0.0.0:8000, 0.0.0.0:8443 ssl');
  args.push('--proxy-listen', proxy.plain, '--proxy-ssl-listen', proxy.ssl);
  args.push('--admin-listen', parseListen(env.KONG_ADMIN_LISTEN ?? '127.0.0.1:8001').plain);
  // Kong's status_listen (kong.conf.default; default 127.0.0.1:8007 since 3.6, kong/templates/kong_defaults.lua): GET /metrics
  const status = parseListen(env.KONG_STATUS_LISTEN ?? '127.0.0.1:8007');
  args.push('--status-listen', status.plain !== 'off' ? status.plain : status.ssl);
  // Kong's headers setting (kong.conf.default): off drops Server / Via naming kong/x.y.z
  if (env.KONG_HEADERS) args.push('--headers', env.KONG_HEADERS);
  // Kong's TLS settings (kong.conf.default ssl_cipher_suite, default intermediate; ssl_ciphers,
  // ssl_protocols and ssl_prefer_server_ciphers, read only with custom), which the gateway maps
  // as kong/conf_loader/parse.lua does (src/gateway/proxy/tls-settings.ts)
  const TLS_SETTINGS = [
    ['KONG_SSL_CIPHER_SUITE', '--ssl-cipher-suite'],
    ['KONG_SSL_CIPHERS', '--ssl-ciphers'],
    ['KONG_SSL_PROTOCOLS', '--ssl-protocols'],
    ['KONG_SSL_PREFER_SERVER_CIPHERS', '--ssl-prefer-server-ciphers'],
  ];
  for (const [name, flag] of TLS_SETTINGS) if (env[name] !== undefined) args.push(flag, env[name]);
  if (env.KONG_SSL_CERT && env.KONG_SSL_CERT_KEY) {
    const cert = pemOf(env.KONG_SSL_CERT) ?? null;
    const key = pemOf(env.KONG_SSL_CERT_KEY) ?? null;
    const certPath = cert ? join(run, 'cert.pem') : env.KONG_SSL_CERT;
    const keyPath = key ? join(run, 'key.pem') : env.KONG_SSL_CERT_KEY;
    if (cert) writeFileSync(certPath, cert, { mode: 0o600 });
    if (key) writeFileSync(keyPath, key, { mode: 0o600 });
    args.push('--cert', certPath, '--key', keyPath);
  }
  process.stderr.write(`kong stand-in ${VERSION}: anonymous_reports=${env.KONG_ANONYMOUS_REPORTS ?? 'on'} headers=${env.KONG_HEADERS ?? 'default'} ssl_cipher_suite=${env.KONG_SSL_CIPHER_SUITE ?? 'intermediate'}\n`);
  const child = spawn(process.execPath, args, { stdio: 'inherit' });
  mkdirSync(join(PID_FILE, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(PID_FILE, `${child.pid}\n`, { mode: 0o600 });
  // Kong writes each change to its database at once: save every change of the
  // state file (written by rename) shortly after it happens, not only at stop
  let timer = null;
  watch(run, () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      try {
        saveBlob(c, 'kong-state', state);
      } catch (err) {
        process.stderr.write(`kong stand-in: saving the state failed: ${String(err.stderr ?? err.message).trim()}\n`);
      }
    }, 300);
  });
  const stop = (signal) => child.kill(signal === 'SIGQUIT' ? 'SIGTERM' : signal);
  for (const s of ['SIGTERM', 'SIGINT', 'SIGQUIT']) process.on(s, () => stop(s));
  const code = await new Promise((resolve) => child.on('exit', (c2, sig) => resolve(c2 ?? (sig ? 0 : 1))));
  clearTimeout(timer);
  rmSync(PID_FILE, { force: true });
  saveBlob(c, 'kong-state', state);
  process.exit(code);
}

async function health() {
  const admin = parseListen(env.KONG_ADMIN_LISTEN ?? '127.0.0.1:8001').plain;
  try {
    const res = await fetch(`http://${admin}/status`, { signal: AbortSignal.timeout(5000) });
    if (res.status === 200) {
      process.stdout.write('Kong is healthy at /usr/local/kong\n');
      return;
    }
  } catch {
    /* falls through */
  }
  die('Kong is not running at /usr/local/kong');
}

function reload() {
  let pid = NaN;
  try {
    pid = Number(readFileSync(PID_FILE, 'utf8').trim());
    process.kill(pid, 0);
  } catch {
    die(`nginx not running in prefix: ${join(PID_FILE, '..', '..')}`);
  }
  // the native gateway rereads --cert/--key on SIGHUP for new TLS connections (src/gateway/server.ts)
  process.kill(pid, 'SIGHUP');
  process.stdout.write('Kong reloaded\n');
}

function migrations(step) {
  const c = conn();
  if (step === 'bootstrap') {
    if (bootstrapped(c)) {
      process.stdout.write('Database already bootstrapped\n');
      return;
    }
    psql(c, `CREATE TABLE schema_meta (key text PRIMARY KEY, subsystem text, executed text[]); INSERT INTO schema_meta VALUES ('schema_meta', 'core', ARRAY['000_base']);`);
    process.stdout.write('Bootstrapping database...\nDatabase is up-to-date\n');
    return;
  }
  if (step === 'up' || step === 'finish') {
    if (!bootstrapped(c)) die("Database needs bootstrapping; run 'kong migrations bootstrap'");
    process.stdout.write(step === 'up' ? 'Database is already up-to-date\n' : 'No pending migrations to finish\n');
    return;
  }
  die(`unknown migrations command: ${step}`);
}

switch (cmd) {
  case 'docker-start':
  case 'start':
    await start();
    break;
  case 'health':
    await health();
    break;
  case 'reload':
    reload();
    break;
  case 'migrations':
    migrations(sub);
    break;
  case 'version':
    process.stdout.write(`Kong ${VERSION} (hospital-api test stand-in)\n`);
    break;
  default:
    die(`unknown command: ${cmd ?? ''}`);
}
