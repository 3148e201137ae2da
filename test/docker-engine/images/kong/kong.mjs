#!/usr/local/bin/node
// `kong` for the stand-in image: the subcommands the hospital-api compose file
// and install use, with the KONG_* settings they set (Kong's kong.conf.default
// names), running the project's native gateway (`hospital-api gateway`).
//   kong docker-start | start     run the gateway in the foreground, its configuration in the
//                                 database shared with every other node (see start() below)
//   kong health                   exit 0 when the gateway answers, as Kong's does
//   kong reload                   as Kong's (kong/cmd/reload.lua): signal the running gateway
//                                 (nginx HUP: new workers with the certificate files read again,
//                                 old ones finish their connections); fails when none runs
//   kong migrations bootstrap|up|finish
//   kong version
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { schemaSql, psql, readBlobAfter, saveBlobIf } from './pg-blob.mjs';
import { readBody } from './http-body.mjs';

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
  return { host: env.KONG_PG_HOST ?? '127.0.0.1', port: Number(env.KONG_PG_PORT ?? 5432), user: env.KONG_PG_USER ?? 'kong', password: env.KONG_PG_PASSWORD, database: env.KONG_PG_DATABASE ?? 'kong', ssl: pgSsl() };
}

/**
 * Kong's pg_ssl settings as libpq's (kong.conf.default: pg_ssl, pg_ssl_required, pg_ssl_verify with its
 * CAs from lua_ssl_trusted_certificate): verify-full checks the chain and the host name, which is what the
 * stack's settings ask of Kong; off unless pg_ssl is on.
 */
function pgSsl() {
  if (env.KONG_PG_SSL !== 'on') return { mode: 'disable' };
  if (env.KONG_PG_SSL_VERIFY === 'on') {
    const ca = env.KONG_LUA_SSL_TRUSTED_CERTIFICATE;
    if (!ca || ca === 'system') die('pg_ssl_verify needs lua_ssl_trusted_certificate (a CA file)');
    return { mode: 'verify-full', rootCert: ca };
  }
  return { mode: env.KONG_PG_SSL_REQUIRED === 'on' ? 'require' : 'prefer' };
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

/**
 * Kong nodes share one database: a write through any node's admin API is stored
 * there before the admin API answers (Kong's DAO writes to Postgres within the
 * request: Kong/kong kong/db/dao/init.lua), and every node reads what changed
 * every db_update_frequency seconds (Kong/kong kong.conf.default, default 5;
 * KONG_DB_UPDATE_FREQUENCY). The stand-in keeps the gateway's state file as one
 * row of standin_blob, its serial one up per write, and:
 *   - runs the gateway with --follow-state, its admin API on a private loopback
 *     port, and answers KONG_ADMIN_LISTEN itself: a write (any method but GET,
 *     HEAD, OPTIONS) is forwarded only after the newest stored version is in the
 *     state file (the gateway makes the change on top of it), and answered only
 *     once the new state file is stored (compare-and-set on the serial). Before
 *     the answer, not at the next poll: a client told 201 must find the change on
 *     every node, also when this one dies right after answering. A change that
 *     lost a race with another node's (the serial moved) is undone here and
 *     answered 409: Kong merges rows, this stand-in stores one document;
 *   - polls the serial every KONG_DB_UPDATE_FREQUENCY seconds and, when it moved,
 *     writes the stored version to the state file (atomically: temp + rename),
 *     which the gateway then serves.
 * Writes and polls of one node run one at a time.
 */
const STATE_BLOB = 'kong-state';
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

class StateSync {
  constructor(c, statePath) {
    this.c = c;
    this.statePath = statePath;
    this.serial = -1; // the stored serial the state file was last made from or stored as
    this.stored = null; // the state file text at that serial
    this.chain = Promise.resolve();
  }

  /** One at a time: a write's pull, forward and push never interleave with a poll. */
  exclusive(fn) {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  fileText() {
    return existsSync(this.statePath) ? readFileSync(this.statePath, 'utf8') : null;
  }

  /** Writes the stored document as the state file's next version (the gateway follows versions). */
  writeFile(text) {
    const doc = JSON.parse(text);
    let local = -1;
    try {
      local = JSON.parse(this.fileText() ?? '{}').version ?? -1;
    } catch {
      /* a broken local file: any version replaces it */
    }
    doc.version = Math.max(Number(doc.version) || 0, local + 1);
    const out = `${JSON.stringify(doc, null, 1)}\n`;
    const tmp = `${this.statePath}.standin-${process.pid}`;
    writeFileSync(tmp, out, { mode: 0o600 });
    renameSync(tmp, this.statePath);
    return out;
  }

  /** The stored version into the state file when it is newer than what the file was made from. */
  async pull() {
    const row = await readBlobAfter(this.c, STATE_BLOB, this.serial);
    if (!row) return false;
    this.stored = this.writeFile(row.data.toString('utf8'));
    this.serial = row.serial;
    return true;
  }

  /** Puts the last stored version back in the state file (a change that could not be stored). */
  undo() {
    if (this.stored !== null && this.fileText() !== this.stored) this.stored = this.writeFile(this.stored);
  }

  /** Stores the state file when it changed since it was pulled or stored; 'stored' | 'same' | 'conflict'. */
  async push() {
    const text = this.fileText();
    if (text === null || text === this.stored) return 'same';
    const serial = await saveBlobIf(this.c, STATE_BLOB, Buffer.from(text), this.serial);
    if (serial === null) {
      // another node stored first: its version wins, this one's change is undone
      await this.pull();
      return 'conflict';
    }
    this.serial = serial;
    this.stored = text;
    return 'stored';
  }
}

/** Forwards one admin request to the gateway's private admin port; resolves with the whole answer. */
function forward(target, req, body) {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers };
    delete headers.connection;
    // addressed to the private port it is sent to: the native admin API answers only requests whose Host names
    // its own address and port (src/gateway/admin/request-origin.ts); the caller asked this front, not that port
    headers.host = `${target.host}:${target.port}`;
    const out = httpRequest({ host: target.host, port: target.port, method: req.method, path: req.url, headers }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    out.on('error', reject);
    out.end(body);
  });
}

function send(res, answer) {
  const headers = { ...answer.headers };
  delete headers.connection;
  delete headers['transfer-encoding'];
  headers['content-length'] = String(answer.body.length);
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}

/** Kong's error body shape (kong/db/errors.lua: message, name, code). */
function kongError(status, name, message) {
  return { status, headers: { 'content-type': 'application/json; charset=utf-8' }, body: Buffer.from(JSON.stringify({ message, name, code: 0 })) };
}

function adminFront(sync, target) {
  return createServer((req, res) => {
    void (async () => {
      try {
        const body = await readBody(req);
        if (!WRITE_METHODS.has(req.method ?? 'GET')) return send(res, await forward(target, req, body));
        const answer = await sync.exclusive(async () => {
          await sync.pull();
          const a = await forward(target, req, body);
          let pushed;
          try {
            pushed = await sync.push();
          } catch (err) {
            // not stored: not made (as Kong, whose change is the database write); the stored version is served again
            sync.undo();
            throw err;
          }
          if (pushed === 'conflict') return kongError(409, 'conflicting change', 'another node changed the configuration at the same time; retry');
          return a;
        });
        send(res, answer);
      } catch (err) {
        process.stderr.write(`kong stand-in: admin request failed: ${String(err.stderr ?? err.message).trim()}\n`);
        if (!res.headersSent) send(res, kongError(503, 'database error', 'the database did not answer'));
        else res.destroy();
      }
    })();
  });
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
  psql(c, schemaSql());
  const sync = new StateSync(c, state);
  await sync.pull();
  const adminListen = parseListen(env.KONG_ADMIN_LISTEN ?? '127.0.0.1:8001').plain;
  // the gateway's own admin API on a private loopback port; the stand-in answers KONG_ADMIN_LISTEN
  const args = ['/app/bin/hospital-api.js', 'gateway', '--state', state, '--follow-state'];
  const proxy = parseListen(env.KONG_PROXY_LISTEN ?? '0.0.0.0:8000, 0.0.0.0:8443 ssl');
  args.push('--proxy-listen', proxy.plain, '--proxy-ssl-listen', proxy.ssl);
  args.push('--admin-listen', adminListen === 'off' ? 'off' : '127.0.0.1:0');
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
  const pollS = Number(env.KONG_DB_UPDATE_FREQUENCY ?? 5);
  if (!(pollS > 0)) die(`KONG_DB_UPDATE_FREQUENCY must be a positive number of seconds, got ${env.KONG_DB_UPDATE_FREQUENCY}`);
  process.stderr.write(`kong stand-in ${VERSION}: anonymous_reports=${env.KONG_ANONYMOUS_REPORTS ?? 'on'} headers=${env.KONG_HEADERS ?? 'default'} ssl_cipher_suite=${env.KONG_SSL_CIPHER_SUITE ?? 'intermediate'} db_update_frequency=${pollS}\n`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'inherit', 'pipe'] });
  mkdirSync(join(PID_FILE, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(PID_FILE, `${child.pid}\n`, { mode: 0o600 });
  const stop = (signal) => child.kill(signal === 'SIGQUIT' ? 'SIGTERM' : signal);
  for (const s of ['SIGTERM', 'SIGINT', 'SIGQUIT']) process.on(s, () => stop(s));
  const exited = new Promise((resolve) => child.on('exit', (c2, sig) => resolve(c2 ?? (sig ? 0 : 1))));
  // the gateway's ready line names its private admin port; its stderr goes on to the container's
  let err = '';
  const ready = new Promise((resolve) => {
    child.stderr.on('data', (d) => {
      process.stderr.write(d);
      if (err.length < 65536) err += d.toString();
      const m = /gateway ready: admin=(\S+)/.exec(err);
      if (m) resolve(m[1]);
    });
  });
  const first = await Promise.race([ready, exited.then((code) => ({ code }))]);
  if (typeof first === 'object') process.exit(first.code);
  let front = null;
  if (adminListen !== 'off') {
    const [host, port] = [first.slice(0, first.lastIndexOf(':')), Number(first.slice(first.lastIndexOf(':') + 1))];
    const [fhost, fport] = [adminListen.slice(0, adminListen.lastIndexOf(':')), Number(adminListen.slice(adminListen.lastIndexOf(':') + 1))];
    front = adminFront(sync, { host, port });
    await new Promise((resolve, reject) => front.once('error', reject).listen(fport, fhost.replace(/^\[|\]$/g, ''), resolve));
  }
  const poll = setInterval(() => {
    void sync
      .exclusive(() => sync.pull())
      .catch((e) => process.stderr.write(`kong stand-in: reading the database failed: ${String(e.stderr ?? e.message).trim()}\n`));
  }, pollS * 1000);
  const code = await exited;
  clearInterval(poll);
  front?.close();
  rmSync(PID_FILE, { force: true });
  // nothing to save at stop: every change was stored before its admin answer
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
