// Entry point of the hapi stand-in. What it reproduces of HAPI FHIR JPA server
// starter 8.x (hapifhir/hapi-fhir-jpaserver-starter):
// - the datasource from SPRING_DATASOURCE_URL / _USERNAME / _PASSWORD, or from a
//   Spring configtree (SPRING_CONFIG_IMPORT=optional:configtree:<dir>/, one file
//   per property name, e.g. spring.datasource.password);
// - the Hibernate dialect as 8.x reads it: the raw property
//   spring.jpa.properties.hibernate.dialect (a dotted environment key) or
//   HIBERNATE_DIALECT (application.yaml's placeholder), else the bundled H2
//   dialect. The upper-case SPRING_JPA_PROPERTIES_HIBERNATE_DIALECT never reaches
//   StarterJpaConfig (starter issue #804). It logs Hibernate's HHH000400 line and,
//   as the real server does with the H2 dialect against Postgres, fails to start.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync, backup } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgSession, schemaSql, psql, psqlAsync, saveBlobSql } from './pg-blob.mjs';
import { readBody } from './http-body.mjs';

const env = process.env;
const H2 = 'ca.uhn.fhir.jpa.model.dialect.HapiFhirH2Dialect';
const POSTGRES = 'ca.uhn.fhir.jpa.model.dialect.HapiFhirPostgresDialect';

function startDelay() {
  const s = Number(env.STANDIN_START_DELAY_S ?? 0);
  if (!(s > 0)) return Promise.resolve();
  log(`stand-in: starting slowly (${s} s), as the real image does`);
  return new Promise((resolve) => setTimeout(resolve, s * 1000));
}
function log(msg) {
  process.stdout.write(`${new Date().toISOString()}  INFO 1 --- [main] ${msg}\n`);
}
function fail(msg) {
  process.stderr.write(`${new Date().toISOString()} ERROR 1 --- [main] ${msg}\n`);
  process.exit(1);
}

/** Spring Boot's configtree import: each file's name is a property, its content the value. */
function configTree() {
  const props = {};
  for (const item of (env.SPRING_CONFIG_IMPORT ?? '').split(',')) {
    const m = /^(optional:)?configtree:(.+)$/.exec(item.trim());
    if (!m) continue;
    const dir = m[2];
    if (!existsSync(dir)) {
      if (!m[1]) fail(`Config data location '${dir}' does not exist`);
      continue;
    }
    for (const name of readdirSync(dir)) {
      if (name.startsWith('.')) continue;
      props[name] = readFileSync(join(dir, name), 'utf8').replace(/\n$/, '');
    }
  }
  return props;
}

const tree = configTree();
const prop = (dotted, upper) => env[dotted] ?? tree[dotted] ?? env[upper];
const url = prop('spring.datasource.url', 'SPRING_DATASOURCE_URL');
const user = prop('spring.datasource.username', 'SPRING_DATASOURCE_USERNAME');
const password = prop('spring.datasource.password', 'SPRING_DATASOURCE_PASSWORD');
const dialect = env['spring.jpa.properties.hibernate.dialect'] ?? tree['spring.jpa.properties.hibernate.dialect'] ?? env.HIBERNATE_DIALECT ?? H2;

log('Starting Application using Java 17 (hospital-api HAPI FHIR stand-in, v8.10.0-3 interface)');
// The real server takes tens of seconds (JVM, Spring, Hibernate) before it listens. The tier's slow
// variant (STANDIN_START_DELAY_S, set in a derived image) makes the stand-in do the same, so install's
// waits and the watchdog's probes are tried against a slow FHIR start.
await startDelay();
log(`HHH000400: Using dialect: ${dialect}`);
const m = /^jdbc:postgresql:\/\/([^:/]+)(?::(\d+))?\/([^?]+)/.exec(url ?? '');
if (!m) fail(`the stand-in needs a jdbc:postgresql datasource, got ${url ? 'another URL' : 'none'}`);
if (dialect !== POSTGRES) {
  fail(`org.hibernate.exception.SQLGrammarException: could not execute statement [ERROR: relation "hfj_resource" does not exist] (dialect ${dialect} against PostgreSQL)`);
}
// pgjdbc's TLS parameters as libpq's (pgjdbc docs, "Using SSL": sslmode, sslrootcert a PEM file)
const query = new URLSearchParams((url ?? '').split('?')[1] ?? '');
const sslmode = query.get('sslmode');
const conn = { host: m[1], port: Number(m[2] ?? 5432), database: m[3], user, password, ssl: sslmode ? { mode: sslmode, rootCert: query.get('sslrootcert') ?? undefined } : undefined };
try {
  psql(conn, 'SELECT 1');
} catch (err) {
  fail(`Unable to obtain connection from database: ${String(err.stderr ?? err.message).trim()}`);
}

// HAPI's schema on the Postgres dialect: the resource table (hapi-fhir-jpaserver-model ResourceTable,
// @Table(name = "HFJ_RESOURCE"); Postgres folds the name to lower case). The tier proves the dialect from
// this table, as it would on the real image, not from a log line (HAPI 8 logs the dialect at DEBUG only).
psql(conn, 'CREATE TABLE IF NOT EXISTS hfj_resource (res_id bigint PRIMARY KEY)');
// HAPI with N replicas keeps everything in the shared Postgres: each replica is
// stateless, a resource written through one is read through any other at once,
// and an answered write is committed there (hapi-fhir-jpaserver-starter: the JPA
// server on spring.datasource, no state of its own on disk). The stand-in's FHIR
// server keeps its data in one SQLite file, so one replica at a time may write:
//   - the writer is the replica that holds a Postgres advisory lock, on a session
//     of its own kept open (pg-blob.mjs PgSession); the others wait for that lock.
//     Two writers never exist at once: the lock has one holder, and the writer
//     stores through the session that holds it, so a writer whose session is gone
//     stores nothing more. When that session goes (the task killed, its node lost:
//     TCP keepalives end it within seconds), a waiting replica gets the lock;
//   - a new writer restores the latest stored copy, runs the FHIR server on
//     loopback, and records its address (the one Postgres sees it connect from:
//     inet_client_addr(), on the network the replicas share) in standin_writer;
//   - every replica answers HAPI's port itself: the writer from its FHIR server,
//     the others by forwarding to the writer's port, Host and X-Forwarded-*
//     untouched, so the links are the ones the writer would make for the caller;
//   - every write (any method but GET, HEAD, OPTIONS) is answered only once the
//     SQLite file that holds it is stored in Postgres (its online backup, one
//     copy per group of concurrent writes): a write that was answered survives
//     the writer's SIGKILL and its node's loss;
//   - /actuator/health (Spring Boot actuator, as the image's HealthCheck asks it):
//     UP on the writer while its FHIR server answers, on the others while their
//     session to Postgres is open.
// With one replica (the docker runtime) it is the writer from the start.
const data = '/data';
const dbFile = join(data, 'fhir.sqlite');
const snapshot = join(data, 'snapshot.sqlite');
const BLOB = 'fhir.sqlite';
const LOCK = 1751474281; // the writer's advisory lock key (ASCII "hapi")
const PORT = 8080;
const SERVER_PORT = 18080; // the writer's FHIR server, loopback only
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const FORWARDED = 'x-standin-forwarded';
psql(conn, schemaSql('CREATE TABLE IF NOT EXISTS standin_writer (id int PRIMARY KEY, address text NOT NULL, since timestamptz NOT NULL);'));
// The starter's AppProperties are @ConfigurationProperties(prefix = "hapi.fhir"): Spring Boot's relaxed
// binding reads them from the dotted name or from the environment as HAPI_FHIR_SERVER_ADDRESS /
// HAPI_FHIR_USE_APACHE_ADDRESS_STRATEGY (the "legacy" underscore form, as HAPI's Helm chart sets it) or
// with the dashes removed (Spring Boot reference, "Binding From Environment Variables").
const appProp = (name) => env[`hapi.fhir.${name}`] ?? tree[`hapi.fhir.${name}`] ?? env[`HAPI_FHIR_${name.toUpperCase()}`] ?? env[`HAPI_FHIR_${name.replace(/_/g, '').toUpperCase()}`];
const serverAddress = appProp('server_address') ?? '';
const apache = String(appProp('use_apache_address_strategy') ?? 'false').toLowerCase() === 'true';
log(`server address strategy: ${serverAddress ? 'hardcoded' : apache ? 'apache proxy (X-Forwarded-*)' : 'incoming request'}`);
log(`replica slot ${env.STANDIN_SLOT ?? '(none)'}`);

/** The roles of this replica: 'starting' (no answer yet), 'forwarder', 'writer', 'stopping'. */
let role = 'starting';
let session = null;
let writerSession = null; // the session that holds the lock, while this replica is the writer
let server = null; // the FHIR server child, on the writer
let writerAddress = null; // host:port of the writer, as a forwarder last read it

function serverUp() {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port: SERVER_PORT, path: '/fhir/metadata', timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function startServer(mine) {
  for (const x of ['', '-wal', '-shm']) rmSync(dbFile + x, { force: true });
  const b64 = await mine.query(`SELECT data FROM standin_blob WHERE name = '${BLOB}'`);
  if (b64) writeFileSync(dbFile, Buffer.from(b64, 'base64'), { mode: 0o600 });
  log(`writer: ${b64 ? 'restored the stored FHIR data' : 'no stored FHIR data yet'}`);
  const child = spawn(process.execPath, ['/standin/hapi-server.mjs', data, serverAddress, String(apache), '127.0.0.1', String(SERVER_PORT)], { stdio: 'inherit' });
  const exited = new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 0 : 1))));
  for (;;) {
    if (await serverUp()) break;
    if (child.exitCode !== null || child.signalCode !== null) fail('the FHIR server exited before it answered');
    await sleep(200);
  }
  child.expectedExit = false;
  void exited.then((code) => {
    if (role === 'stopping' || child.expectedExit) return;
    // as the JVM dying: the container ends, and the engine restarts it
    fail(`the FHIR server exited (${code})`);
  });
  return child;
}

/** One copy of the SQLite file into Postgres, through the lock's session (fenced by it). */
async function storeNow() {
  const db = new DatabaseSync(dbFile, { readOnly: true });
  try {
    await backup(db, snapshot);
  } finally {
    db.close();
  }
  const s = writerSession;
  if (role !== 'writer' || s === null) throw new Error('no longer the writer');
  await s.query(saveBlobSql(BLOB, readFileSync(snapshot)));
}

// Group commit: a write waits for a copy begun after it was answered by the FHIR server;
// writes that finish while one copy runs share the next.
let storing = Promise.resolve();
let queued = null;
function storeAfterNow() {
  if (queued) return queued;
  const next = storing.catch(() => undefined).then(() => {
    queued = null;
    return storeNow();
  });
  queued = next;
  storing = next;
  return next;
}

/** Elects this replica on a new session: the writer if the lock is free, else a forwarder that waits for it. */
async function elect() {
  const mine = new PgSession(conn);
  session = mine;
  void mine.closed.then((err) => {
    if (role === 'stopping' || session !== mine) return;
    log(`the Postgres session ended (${err.message.split('\n')[0]}): electing again`);
    lost();
  });
  try {
    if ((await mine.query(`SELECT pg_try_advisory_lock(${LOCK})`)) !== 't') {
      role = 'forwarder';
      log('a forwarder: another replica is the writer');
      await mine.query(`SELECT pg_advisory_lock(${LOCK})`);
      role = 'starting';
    }
    const address = await mine.query('SELECT host(inet_client_addr())');
    const child = await startServer(mine);
    if (session !== mine) {
      child.expectedExit = true;
      child.kill('SIGKILL');
      return;
    }
    server = child;
    await mine.query(`INSERT INTO standin_writer (id, address, since) VALUES (1, '${address}:${PORT}', now()) ON CONFLICT (id) DO UPDATE SET address = EXCLUDED.address, since = EXCLUDED.since`);
    writerSession = mine;
    role = 'writer';
    log(`the writer (at ${address || 'a local socket'})`);
  } catch (err) {
    if (role === 'stopping' || session !== mine) return;
    // ending the session starts the next election (its `closed`, above)
    log(`election failed: ${String(err.message).split('\n')[0]}`);
    mine.child.kill('SIGKILL');
  }
}

/** The session went (Postgres restarted, the network cut): no writes from here until elected again. */
function lost() {
  role = 'starting';
  session = null;
  writerSession = null;
  writerAddress = null;
  if (server) {
    // its data may be older than what a new writer stores: the next writer (this one or another) restores
    server.expectedExit = true;
    server.kill('SIGKILL');
    server = null;
  }
  setTimeout(() => void elect(), 1000);
}

// an idle psql learns that its server went only when it sends something
setInterval(() => {
  if (role === 'writer' && writerSession) void writerSession.query('SELECT 1').catch(() => undefined);
}, 2000).unref();

function operationOutcome(res, status, text) {
  if (res.headersSent) return res.destroy();
  const body = JSON.stringify({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'transient', diagnostics: text }] });
  res.writeHead(status, { 'content-type': 'application/fhir+json;charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const HOP = ['connection', 'keep-alive', 'transfer-encoding', 'proxy-connection', 'upgrade'];
function requestHeaders(req, body, extra = {}) {
  const h = { ...req.headers, ...extra };
  for (const k of HOP) delete h[k];
  h['content-length'] = String(body.length);
  return h;
}

/** Sends `body` to host:port as `req` asked; resolves with the response (not yet read). */
function send(host, port, req, body, extra) {
  return new Promise((resolve, reject) => {
    const out = httpRequest({ host, port, method: req.method, path: req.url, headers: requestHeaders(req, body, extra) }, resolve);
    out.on('error', reject);
    out.end(body);
  });
}

function relay(res, upstream) {
  const h = { ...upstream.headers };
  for (const k of HOP) delete h[k];
  res.writeHead(upstream.statusCode ?? 502, h);
  upstream.pipe(res);
}

async function readAll(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return Buffer.concat(chunks);
}

async function writerAnswer(req, res, body) {
  const upstream = await send('127.0.0.1', SERVER_PORT, req, body);
  if (READ_METHODS.has(req.method)) return relay(res, upstream);
  const answer = await readAll(upstream);
  try {
    await storeAfterNow();
  } catch (err) {
    log(`storing a write failed: ${String(err.message).split('\n')[0]}`);
    return operationOutcome(res, 503, 'the write could not be stored in the database; it is not acknowledged');
  }
  const h = { ...upstream.headers };
  for (const k of HOP) delete h[k];
  h['content-length'] = String(answer.length);
  res.writeHead(upstream.statusCode ?? 502, h);
  res.end(answer);
}

async function currentWriter(refresh) {
  if (writerAddress && !refresh) return writerAddress;
  const row = (await psqlAsync(conn, 'SELECT address FROM standin_writer WHERE id = 1')).trim();
  writerAddress = row || null;
  return writerAddress;
}

const NOT_REACHED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
async function forwarderAnswer(req, res, body) {
  for (let attempt = 0; attempt < 2; attempt++) {
    const at = await currentWriter(attempt > 0);
    if (!at) return operationOutcome(res, 503, 'no FHIR writer is elected yet');
    const i = at.lastIndexOf(':');
    try {
      return relay(res, await send(at.slice(0, i), Number(at.slice(i + 1)), req, body, { [FORWARDED]: '1' }));
    } catch (err) {
      // the writer moved (or is gone): the request never reached it, so asking the new one is safe
      if (!NOT_REACHED.has(err.code)) throw err;
      writerAddress = null;
    }
  }
  return operationOutcome(res, 503, 'the FHIR writer is not reachable');
}

async function health(res) {
  const up = role === 'writer' ? await serverUp() : role === 'forwarder' && session !== null;
  const body = JSON.stringify({ status: up ? 'UP' : 'DOWN' });
  res.writeHead(up ? 200 : 503, { 'content-type': 'application/vnd.spring-boot.actuator.v3+json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const front = createServer((req, res) => {
  void (async () => {
    if (req.url === '/actuator/health' && (req.method === 'GET' || req.method === 'HEAD')) return health(res);
    const body = await readBody(req);
    if (role === 'writer') return await writerAnswer(req, res, body);
    // a forwarded request reaches a replica that is no longer the writer: never forwarded again (no loop)
    if (role === 'forwarder' && !req.headers[FORWARDED]) return await forwarderAnswer(req, res, body);
    return operationOutcome(res, 503, 'this FHIR replica is not serving yet');
  })().catch((err) => {
    log(`request failed: ${String(err.message).split('\n')[0]}`);
    operationOutcome(res, 502, 'the FHIR writer did not answer');
  });
});

void elect();
// HAPI's port opens once this replica can answer: as the writer, or as a forwarder
while (role !== 'writer' && role !== 'forwarder') await sleep(100);
await new Promise((resolve) => front.listen(PORT, '0.0.0.0', resolve));
log(`Tomcat started on port ${PORT} (http) with context path '' (stand-in front, ${role})`);

async function stop(signal) {
  if (role === 'stopping') return;
  role = 'stopping';
  front.close();
  const child = server;
  if (child && child.exitCode === null) {
    child.kill(signal);
    await new Promise((resolve) => child.once('exit', resolve));
  }
  // every answered write is stored already; ending the session frees the lock for another replica
  if (session) await session.close();
  process.exit(0);
}
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => void stop(s));
