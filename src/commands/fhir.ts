/**
 * `hospital-api fhir`: run the native FHIR R4 server; `fhir load` and `fhir generate`
 * (src/fhir-data/load, src/fhir-data/generate) are loaded lazily so `--help` stays fast.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { HospitalApiError } from '../errors/index.js';
import type { Io } from '../output/io.js';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface ServeOptions extends GlobalOptions {
  host: string;
  port: string;
  data: string;
  publicBase?: string;
  referentialIntegrity: boolean;
  synchronous: string;
  bodyLimit: string;
  openApi?: boolean;
}

function parseBodyLimit(value: string): number {
  const m = /^(\d{1,6})(k|m)?$/i.exec(value.trim());
  if (!m) throw new HospitalApiError('ERR_USAGE', { detail: `--body-limit must be a number of bytes, or NNk / NNm, got "${value}"` });
  const n = Number(m[1]) * (m[2]?.toLowerCase() === 'm' ? 1024 * 1024 : m[2] ? 1024 : 1);
  if (n < 1024 || n > 1024 * 1024 * 1024) throw new HospitalApiError('ERR_USAGE', { detail: '--body-limit must be between 1k and 1024m' });
  return n;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value) || port > 65535) throw new HospitalApiError('ERR_USAGE', { detail: `--port must be 0-65535, got "${value}"` });
  return port;
}

function parseBase(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new HospitalApiError('ERR_USAGE', { detail: `--public-base must be an absolute http(s) URL, got "${value}"` });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new HospitalApiError('ERR_USAGE', { detail: '--public-base must be http or https' });
  return value.replace(/\/+$/, '');
}

async function serve(options: ServeOptions, io: Io): Promise<number> {
  const port = parsePort(options.port);
  const publicBase = parseBase(options.publicBase);
  const { startFhirServer } = await import('../fhir/server/start.js');
  if (options.synchronous !== 'full' && options.synchronous !== 'normal') {
    throw new HospitalApiError('ERR_USAGE', { detail: `--synchronous must be full or normal, got "${options.synchronous}"` });
  }
  const server = await startFhirServer({
    host: options.host,
    port,
    dataDir: resolve(options.data),
    ...(publicBase ? { publicBase } : {}),
    policy: { referentialIntegrity: options.referentialIntegrity },
    limits: { bodyLimit: parseBodyLimit(options.bodyLimit) },
    synchronous: options.synchronous,
    openApi: options.openApi === true,
  });
  process.stderr.write(`hospital-api fhir listening on ${server.url} (data ${resolve(options.data)})\n`);
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      void server.close().then(done, done);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  io.log('hospital-api fhir stopped');
  return 0;
}

/**
 * Without --url, `fhir load` goes to the installation's own FHIR address (issue 27: the docker
 * runtime publishes its FHIR port on its own port and address), read from install.json through the
 * runtime's profile; with no installation there, the loader's default (a bare `hospital-api fhir`).
 * A --dir that names no installation is an error rather than a silent fallback. Requests to the
 * installation carry what its runtime asks for there (docker: the FHIR door's token from
 * <dir>/secrets); a --url elsewhere gets none of it.
 */
async function installationFhirTarget(dir: string | undefined, url: string | undefined): Promise<{ url?: string; headers?: Record<string, string> }> {
  const { existsSync } = await import('node:fs');
  const { defaultInstallDir, installPaths } = await import('../install-dir/layout.js');
  const paths = installPaths(dir ?? defaultInstallDir());
  if (!existsSync(paths.installJson)) {
    if (dir !== undefined) throw new HospitalApiError('ERR_USAGE', { detail: `--dir ${paths.root} holds no installation (no install.json); give --url instead` });
    return url === undefined ? {} : { url };
  }
  const { readInstallConfig } = await import('../install-dir/install-config.js');
  const { siteFhirClient } = await import('../runtime/profiles.js');
  const site = siteFhirClient(paths.root, readInstallConfig(paths.root));
  if (url === undefined) return { url: site.base, headers: site.headers };
  return sameOrigin(url, site.base) ? { url, headers: site.headers } : { url };
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false; // the loader reports the bad --url
  }
}

export function register(program: Command): void {
  const fhir = program
    .command('fhir')
    .description(SUMMARIES.fhir)
    .option('--host <host>', 'address to listen on; callers not on loopback get GET /fhir/metadata only (see --open-api)', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '8080')
    .option('--data <dir>', 'data directory (one SQLite file)', './fhir-data')
    .option('--public-base <url>', 'the base URL clients see (for links and fullUrls)')
    .option('--no-referential-integrity', 'accept references to resources that do not exist (bulk loads in any order)')
    .option('--synchronous <mode>', 'full: every commit survives a power cut; normal: faster, the last commits may be lost on power loss', 'full')
    .option('--body-limit <size>', 'largest request body (bytes, or NNk / NNm); larger ones get 413 before parsing', '64m')
    .option('--open-api', 'serve the FULL API, unauthenticated reads and writes, to every address --host reaches (default: loopback callers only)')
    .action(action<ServeOptions>('fhir', (options, io) => serve(options, io)));

  fhir
    .command('load <files...>')
    .description('load transaction/batch Bundles and NDJSON into a FHIR server (a directory: its *.json and *.ndjson files, in name order)')
    .option('--url <base>', "FHIR base URL (default: the installation's own FHIR address, else http://127.0.0.1:8080/fhir)")
    .option('--dir <dir>', 'installation whose FHIR server to load when --url is not given (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--concurrency <n>', 'bundles in flight')
    .option('--state <file>', 'resume state file')
    .action(
      action<GlobalOptions & { url?: string; dir?: string; concurrency?: string; state?: string }>('fhir load', async (options, io, args) => {
        const { runLoad } = await import('../fhir-data/load/command.js');
        const files = args.length ? args : [];
        const target = await installationFhirTarget(options.dir, options.url);
        return runLoad({ files, ...target, ...pick(options, ['concurrency', 'state']) }, io);
      }),
    );

  // the docker runtime's door in front of HAPI (templates/compose.yaml, service fhir-door); not for people
  fhir
    .command('door', { hidden: true })
    .description('forward to one FHIR server: GET /fhir/metadata open, everything else with the door token')
    .requiredOption('--upstream <origin>', 'the FHIR server, an http origin such as http://hapi:8080')
    .requiredOption('--token-file <file>', 'the file holding the door token')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on', '8080')
    .action(
      action<GlobalOptions & { upstream: string; tokenFile: string; host: string; port: string }>('fhir door', async (options) => {
        const { runFhirDoor } = await import('../fhir-door/command.js');
        return runFhirDoor({ host: options.host, port: parsePort(options.port), upstream: options.upstream, tokenFile: options.tokenFile });
      }),
    );

  fhir
    .command('generate')
    .description('write a reproducible synthetic FHIR data set')
    .requiredOption('--patients <n>', 'number of patients')
    .requiredOption('--seed <s>', 'random seed')
    .option('--sizes <range>', 'resources per patient, e.g. 10-10000')
    .option('--out <dir>', 'output directory')
    .option('--format <f>', 'bundles, ndjson or both')
    .option('--dir <dir>', 'installation the data is for: the `fhir load` command printed at the end names it')
    .action(
      action<GlobalOptions & { patients: string; seed: string; sizes?: string; out?: string; format?: 'bundles' | 'ndjson' | 'both'; dir?: string }>(
        'fhir generate',
        async (options, io) => {
          const { runGenerate } = await import('../fhir-data/generate/command.js');
          return runGenerate({ patients: options.patients, seed: options.seed, ...pick(options, ['sizes', 'out', 'format', 'dir']) }, io);
        },
      ),
    );
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
