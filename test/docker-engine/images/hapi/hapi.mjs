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
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, backup } from 'node:sqlite';
import { restoreBlob, saveBlob, psql } from './pg-blob.mjs';

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
const conn = { host: m[1], port: Number(m[2] ?? 5432), database: m[3], user, password };
try {
  psql(conn, 'SELECT 1');
} catch (err) {
  fail(`Unable to obtain connection from database: ${String(err.stderr ?? err.message).trim()}`);
}

// HAPI's schema on the Postgres dialect: the resource table (hapi-fhir-jpaserver-model ResourceTable,
// @Table(name = "HFJ_RESOURCE"); Postgres folds the name to lower case). The tier proves the dialect from
// this table, as it would on the real image, not from a log line (HAPI 8 logs the dialect at DEBUG only).
psql(conn, 'CREATE TABLE IF NOT EXISTS hfj_resource (res_id bigint PRIMARY KEY)');
const data = '/data';
restoreBlob(conn, 'fhir.sqlite', join(data, 'fhir.sqlite'));
// The starter's AppProperties are @ConfigurationProperties(prefix = "hapi.fhir"): Spring Boot's relaxed
// binding reads them from the dotted name or from the environment as HAPI_FHIR_SERVER_ADDRESS /
// HAPI_FHIR_USE_APACHE_ADDRESS_STRATEGY (the "legacy" underscore form, as HAPI's Helm chart sets it) or
// with the dashes removed (Spring Boot reference, "Binding From Environment Variables").
const appProp = (name) => env[`hapi.fhir.${name}`] ?? tree[`hapi.fhir.${name}`] ?? env[`HAPI_FHIR_${name.toUpperCase()}`] ?? env[`HAPI_FHIR_${name.replace(/_/g, '').toUpperCase()}`];
const serverAddress = appProp('server_address') ?? '';
const apache = String(appProp('use_apache_address_strategy') ?? 'false').toLowerCase() === 'true';
log(`server address strategy: ${serverAddress ? 'hardcoded' : apache ? 'apache proxy (X-Forwarded-*)' : 'incoming request'}`);
// HAPI serves its whole API to whoever reaches it (the compose file publishes it on 127.0.0.1 only,
// and kong reaches it over the project network): hapi-server.mjs opens the native server's API too.
const child = spawn(process.execPath, ['/standin/hapi-server.mjs', data, serverAddress, String(apache)], { stdio: 'inherit' });
// HAPI writes to Postgres as it goes: snapshot the SQLite file (SQLite's online
// backup, consistent while the server writes) into the database every few
// seconds when it changed, and once more at stop
const dbFile = join(data, 'fhir.sqlite');
const snapshot = join(data, 'snapshot.sqlite');
let seen = '';
let saving = false;
async function persist() {
  if (saving || !existsSync(dbFile)) return;
  const stamp = ['', '-wal'].map((x) => (existsSync(dbFile + x) ? `${statSync(dbFile + x).mtimeMs}:${statSync(dbFile + x).size}` : '-')).join('/');
  if (stamp === seen) return;
  saving = true;
  try {
    const db = new DatabaseSync(dbFile, { readOnly: true });
    try {
      await backup(db, snapshot);
    } finally {
      db.close();
    }
    saveBlob(conn, 'fhir.sqlite', snapshot);
    seen = stamp;
  } catch (err) {
    process.stderr.write(`hapi stand-in: snapshot failed: ${String(err.stderr ?? err.message).trim()}\n`);
  } finally {
    saving = false;
  }
}
const interval = setInterval(() => void persist(), 3000);
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => child.kill(s));
const code = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 0 : 1))));
clearInterval(interval);
// the server has closed the file: it is complete on its own
saveBlob(conn, 'fhir.sqlite', dbFile);
process.exit(code);
