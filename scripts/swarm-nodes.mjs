#!/usr/bin/env node
/**
 * A real three-node Docker Swarm on this one machine, for the swarm test tier
 * (test/swarm-engine/, issue 29). Root only; it installs nothing (Debian's
 * docker.io and iproute2, as for the docker tier).
 *
 *   node scripts/swarm-nodes.mjs start    three dockerd nodes, one swarm (manager n1, workers n2 n3)
 *   node scripts/swarm-nodes.mjs stop     kill and remove all of it; idempotent, also after a crash
 *   node scripts/swarm-nodes.mjs status   print the state file and whether each node answers
 *   node scripts/swarm-nodes.mjs load IMAGE…   copy images from the docker tier's engine to every node
 *   node scripts/swarm-nodes.mjs kill NODE     kill every process of one node (a lost machine)
 *   node scripts/swarm-nodes.mjs leftovers     list what start made that still exists (exit 1 if any)
 *
 * What start makes (names in NODES/BRIDGE_NS below), each written to the state
 * file before it is made, so `stop` knows what to remove:
 * - a network namespace `hapi-sw-br` holding the bridge br0 (198.51.100.1/24);
 * - per node nI a network namespace `hapi-sw-nI`, a veth pair whose two ends are
 *   created inside those namespaces (eth0 198.51.100.1I/24 in the node, nI on br0).
 *   The host namespace never gets an address from that range: the docker tier
 *   uses 198.51.100.0/24 on a bridge in the host namespace;
 * - per node a cgroup `/hapi-sw/nI` in every mounted v1 controller: dockerd and its
 *   containerd run in it and the containers under it (--cgroup-parent), so stop
 *   can freeze and kill every process of a node, shims and containers included;
 * - per node dockerd (started with `nsenter --net=/run/netns/…`: `ip netns exec`
 *   remounts /sys and dockerd then fails "Devices cgroup isn't mounted") and
 *   `unshare --uts` so each node has its own host name (the swarm node name),
 *   data root ROOT/nI (kept between runs: the image cache), exec root and socket
 *   under RUN/nI, no iptables, no NAT, no default bridge, overlay2 storage (vfs
 *   when the kernel has no overlay), a DNS server address on which nothing listens
 *   (whatever the embedded DNS forwards fails at once, nothing leaves the namespaces).
 *
 * Images reach the nodes without a registry: `docker save` from the docker tier's
 * engine (TIER_DOCKER_HOST) into a tar cached by image id, `docker load` into each
 * node over its unix socket, skipped on a node that already has that image id.
 */
import { $, fs, path, sleep } from 'zx';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

$.verbose = false;
const ROOT = process.env.HOSPITAL_API_SWARM_ROOT || '/var/lib/hospital-api-swarm-tier';
const RUN = process.env.HOSPITAL_API_SWARM_RUN || '/run/hospital-api-swarm-tier';
const STATE = path.join(RUN, 'state.json');
/** The docker tier's engine (scripts/docker-engine.mjs), where the images come from. */
const TIER_DOCKER_HOST = process.env.HOSPITAL_API_TIER_DOCKER_HOST || process.env.DOCKER_HOST || 'unix:///run/hospital-api-docker-tier/docker.sock';
const PREFIX = 'hapi-sw';
export const BRIDGE_NS = `${PREFIX}-br`;
const BRIDGE_ADDR = '198.51.100.1';
export const NODES = Object.freeze(['n1', 'n2', 'n3'].map((name, i) => ({
  name,
  ns: `${PREFIX}-${name}`,
  addr: `198.51.100.1${i + 1}`,
  // the node's own local networks (docker_gwbridge, by which a task reaches a server outside the
  // swarm): a range of its own, so the bridge namespace routes each node's back to it
  localPool: `172.3${i + 1}.0.0/16`,
  role: i === 0 ? 'manager' : 'worker',
  socket: path.join(RUN, name, 'docker.sock'),
})));
const CGROUP_FS = '/sys/fs/cgroup';

function log(text) {
  process.stderr.write(`swarm-nodes: ${text}\n`);
}

function readState() {
  try {
    return JSON.parse(fs.readFileSync(STATE, 'utf8'));
  } catch {
    return null;
  }
}

function writeState(state) {
  fs.mkdirpSync(RUN);
  fs.writeFileSync(`${STATE}.tmp`, JSON.stringify(state, null, 2));
  fs.renameSync(`${STATE}.tmp`, STATE);
}

const nodeDocker = (node) => $({ env: { ...process.env, DOCKER_HOST: `unix://${node.socket}` } });

async function answers(node) {
  const res = await nodeDocker(node)`docker info --format {{.ServerVersion}}`.quiet().nothrow().timeout('10s');
  return res.exitCode === 0 && res.stdout.trim().length > 0;
}

/** Every cgroup hierarchy mounted under /sys/fs/cgroup: [mount point, type, super options]. */
function hierarchies() {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((line) => line.split(' '))
    .filter((f) => f.length > 9 && ['cgroup', 'cgroup2'].includes(f[f.indexOf('-') + 1]) && f[4].startsWith(`${CGROUP_FS}/`))
    .map((f) => [f[4], f[f.indexOf('-') + 1], f[f.length - 1]]);
}

/** The v1 controllers a node's daemon joins (named hierarchies and cgroup2 left out). */
function controllers() {
  return hierarchies().filter(([, type, opts]) => type === 'cgroup' && !opts.includes('name=')).map(([mp]) => mp);
}

/**
 * Where stop looks for cgroups: runc also makes the containers' cgroups under
 * --cgroup-parent in the name=systemd and the unified (cgroup2) hierarchies.
 */
function allCgroupRoots() {
  return hierarchies().map(([mp]) => mp);
}

function storageDriver() {
  return fs.readFileSync('/proc/filesystems', 'utf8').split('\n').some((l) => l.trim().endsWith('overlay')) ? 'overlay2' : 'vfs';
}

async function start() {
  if ((await $`id -u`).stdout.trim() !== '0') throw new Error('root is needed (network namespaces, cgroups, dockerd)');
  for (const bin of ['dockerd', 'docker', 'ip', 'nsenter', 'unshare']) {
    if ((await $`command -v ${bin}`.nothrow()).exitCode !== 0) throw new Error(`${bin} is not installed (apt-get install docker.io iproute2 util-linux)`);
  }
  // what a crashed run left (or a run that was never stopped) goes first: one swarm at a time
  await stop();
  const t0 = Date.now();
  const driver = storageDriver();
  const state = { made: new Date().toISOString(), netns: [], cgroups: [], pids: {}, driver, nodes: NODES.map((n) => n.name) };
  writeState(state);

  state.netns.push(BRIDGE_NS);
  writeState(state);
  await $`ip netns add ${BRIDGE_NS}`;
  await $`ip -n ${BRIDGE_NS} link set lo up`;
  await $`ip -n ${BRIDGE_NS} link add br0 type bridge`;
  await $`ip -n ${BRIDGE_NS} addr add ${BRIDGE_ADDR}/24 dev br0`;
  await $`ip -n ${BRIDGE_NS} link set br0 up`;
  // a router between the nodes' local networks (no NAT: each node's tasks keep their own addresses)
  await $`nsenter --net=/run/netns/${BRIDGE_NS} sh -c ${'echo 1 > /proc/sys/net/ipv4/ip_forward'}`;

  const ctls = controllers();
  for (const node of NODES) {
    state.netns.push(node.ns);
    writeState(state);
    await $`ip netns add ${node.ns}`;
    // both ends are made inside the test's namespaces: nothing appears in the host's
    await $`ip -n ${BRIDGE_NS} link add ${node.name} type veth peer name eth0 netns ${node.ns}`;
    await $`ip -n ${BRIDGE_NS} link set ${node.name} master br0 up`;
    await $`ip -n ${node.ns} link set lo up`;
    await $`ip -n ${node.ns} addr add ${node.addr}/24 dev eth0`;
    await $`ip -n ${node.ns} link set eth0 up`;
    await $`ip -n ${node.ns} route add default via ${BRIDGE_ADDR}`;
    await $`ip -n ${BRIDGE_NS} route add ${node.localPool} via ${node.addr}`;

    for (const ctl of ctls) {
      const dir = path.join(ctl, PREFIX, node.name);
      state.cgroups.push(dir);
      writeState(state);
      await fs.mkdirp(dir);
      // cpuset: a cgroup takes no task until it has cpus and mems (copied from its parent)
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        for (const d of [path.dirname(dir), dir]) {
          const own = path.join(d, file);
          if (fs.existsSync(own) && !fs.readFileSync(own, 'utf8').trim()) fs.writeFileSync(own, fs.readFileSync(path.join(path.dirname(d), file), 'utf8'));
        }
      }
    }

    const data = path.join(ROOT, node.name);
    const run = path.join(RUN, node.name);
    // a fresh swarm each run: the swarm's raft state and old networks go, images stay
    for (const part of ['swarm', 'network']) await fs.remove(path.join(data, part));
    await fs.mkdirp(data);
    await fs.mkdirp(run);
    const joinCgroups = ctls.map((ctl) => `echo $$ > ${path.join(ctl, PREFIX, node.name, 'cgroup.procs')}`).join('; ');
    const dockerd = [
      'dockerd',
      `--data-root=${data}`,
      `--exec-root=${path.join(run, 'exec')}`,
      `--pidfile=${path.join(run, 'dockerd.pid')}`,
      `-H unix://${node.socket}`,
      `--storage-driver=${driver}`,
      '--iptables=false',
      '--ip-masq=false',
      '--bridge=none',
      `--dns=${BRIDGE_ADDR}`,
      `--default-address-pool=base=${node.localPool},size=24`,
      `--cgroup-parent=/${PREFIX}/${node.name}`,
      '--log-driver=json-file',
      '--log-opt=max-size=10m',
    ].join(' ');
    const out = fs.openSync(path.join(run, 'dockerd.log'), 'a');
    // no service ever pulls: images are loaded beforehand (moby daemon/cluster/executor/container/controller.go, Prepare)
    const child = spawn(
      'sh',
      ['-c', `${joinCgroups}; exec nsenter --net=/run/netns/${node.ns} -- unshare --uts -- sh -c 'hostname ${node.name} && exec ${dockerd}'`],
      { detached: true, stdio: ['ignore', out, out], env: { ...process.env, DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: '1' } },
    );
    child.unref();
    state.pids[node.name] = child.pid;
    writeState(state);
  }
  for (const node of NODES) {
    const deadline = Date.now() + 60_000;
    while (!(await answers(node))) {
      if (Date.now() > deadline) throw new Error(`dockerd ${node.name} did not answer within 60 s; see ${path.join(RUN, node.name, 'dockerd.log')}`);
      await sleep(200);
    }
    // containers a killed run left behind (stopped now) and their layers
    await nodeDocker(node)`docker container prune -f`.quiet().nothrow();
  }
  const [manager, ...workers] = NODES;
  await nodeDocker(manager)`docker swarm init --advertise-addr ${manager.addr} --listen-addr ${manager.addr}:2377 --dispatcher-heartbeat 1s`.quiet();
  const token = (await nodeDocker(manager)`docker swarm join-token -q worker`).stdout.trim();
  await Promise.all(workers.map((w) => nodeDocker(w)`docker swarm join --token ${token} --advertise-addr ${w.addr} --listen-addr ${w.addr}:2377 ${manager.addr}:2377`.quiet()));
  log(`three nodes (${driver}) in one swarm: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  for (const node of NODES) process.stdout.write(`${node.name} ${node.role} ${node.addr} DOCKER_HOST=unix://${node.socket}\n`);
}

/** Every pid in a cgroup directory and the cgroups below it. */
function pidsUnder(dir) {
  if (!fs.existsSync(dir)) return [];
  const pids = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) pids.push(...pidsUnder(path.join(dir, entry.name)));
  }
  const procs = path.join(dir, 'cgroup.procs');
  if (fs.existsSync(procs)) pids.push(...fs.readFileSync(procs, 'utf8').split('\n').filter(Boolean).map(Number));
  return pids;
}

/** Cgroup directories at and below dir, deepest first. */
function cgroupDirs(dir) {
  if (!fs.existsSync(dir)) return [];
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) out.push(...cgroupDirs(path.join(dir, entry.name)));
  }
  out.push(dir);
  return out;
}

/** Mount points under any of the given roots, deepest first. */
function mountsUnder(roots) {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((line) => line.split(' ')[4])
    .filter((mp) => mp && roots.some((r) => mp === r || mp.startsWith(`${r}/`)))
    .sort((a, b) => b.length - a.length);
}

/** Kill every process of a node: freeze its cgroup (nothing forks meanwhile), SIGKILL all, thaw. */
export async function killNode(name) {
  const freezer = controllers().find((c) => c.endsWith('/freezer'));
  const frozen = freezer && path.join(freezer, PREFIX, name);
  const pidsCtl = controllers().find((c) => c.endsWith('/pids')) ?? freezer;
  const dir = path.join(pidsCtl, PREFIX, name);
  if (frozen && fs.existsSync(frozen)) fs.writeFileSync(path.join(frozen, 'freezer.state'), 'FROZEN');
  for (const pid of pidsUnder(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  if (frozen && fs.existsSync(frozen)) fs.writeFileSync(path.join(frozen, 'freezer.state'), 'THAWED');
  const deadline = Date.now() + 30_000;
  while (pidsUnder(dir).length) {
    if (Date.now() > deadline) throw new Error(`processes of ${name} still alive after SIGKILL: ${pidsUnder(dir).join(' ')}`);
    await sleep(100);
  }
}

async function stop() {
  // the names are fixed, so a lost or half-written state file still finds everything
  const state = readState() ?? {};
  if (!state.made && !(await leftovers()).length) {
    log('nothing to stop');
    return;
  }
  // graceful first where a node still answers: its containers and their layers go
  // with it, so the data root kept as the image cache does not grow run by run
  await Promise.all(NODES.map(async (node) => {
    if (!(await answers(node))) return;
    const ids = (await nodeDocker(node)`docker ps -aq`.nothrow()).stdout.split('\n').filter(Boolean);
    if (ids.length) await nodeDocker(node)`docker rm -f -v ${ids}`.quiet().nothrow();
  }));
  for (const node of NODES) await killNode(node.name);
  // overlay2 layers, shm and secret mounts, netns bind mounts under the exec roots
  for (const mp of mountsUnder([RUN, ...NODES.map((n) => path.join(ROOT, n.name))])) await $`umount -l ${mp}`.quiet().nothrow();
  for (const ctl of allCgroupRoots()) {
    for (const dir of cgroupDirs(path.join(ctl, PREFIX))) {
      try {
        fs.rmdirSync(dir);
      } catch (err) {
        log(`cgroup ${dir}: ${err.code}`);
      }
    }
  }
  // deleting a namespace deletes the veths, the bridge and the VXLAN devices in it
  for (const ns of [BRIDGE_NS, ...NODES.map((n) => n.ns)]) {
    if (fs.existsSync(`/run/netns/${ns}`)) await $`ip netns del ${ns}`.quiet().nothrow();
  }
  for (const node of NODES) {
    for (const part of ['swarm', 'network', 'volumes']) await fs.remove(path.join(ROOT, node.name, part));
  }
  await fs.remove(RUN);
  const left = await leftovers();
  if (left.length) throw new Error(`left behind: ${left.join('; ')}`);
  log('stopped; nothing left behind');
}

/** What start made that still exists: namespaces, mounts, cgroups, processes. Empty after stop. */
export async function leftovers() {
  const left = [];
  const ns = (await $`ip netns list`.nothrow()).stdout.split('\n').map((l) => l.split(' ')[0]).filter((n) => n.startsWith(`${PREFIX}-`));
  if (ns.length) left.push(`netns ${ns.join(' ')}`);
  const mounts = mountsUnder([RUN, ...NODES.map((n) => path.join(ROOT, n.name))]);
  if (mounts.length) left.push(`${mounts.length} mounts (${mounts.slice(0, 3).join(' ')})`);
  const cgroups = allCgroupRoots().filter((c) => fs.existsSync(path.join(c, PREFIX)));
  if (cgroups.length) left.push(`cgroups ${cgroups.map((c) => path.join(c, PREFIX)).join(' ')}`);
  const procs = (await $`ps -eo pid=,args=`.nothrow()).stdout.split('\n').filter((l) => l.includes(RUN) || l.includes(`/netns/${PREFIX}-`));
  if (procs.length) left.push(`processes ${procs.map((l) => l.trim().split(' ')[0]).join(' ')}`);
  if (fs.existsSync(RUN)) left.push(RUN);
  return left;
}

async function status() {
  const state = readState();
  if (!state) {
    process.stdout.write('not running\n');
    return;
  }
  process.stdout.write(`${JSON.stringify(state, null, 2)}\n`);
  for (const node of NODES) process.stdout.write(`${node.name} ${node.addr} ${(await answers(node)) ? 'answers' : 'down'}\n`);
}

/** Images from the docker tier's engine into every node; a node with the same image id is skipped. */
async function load(images) {
  if (!images.length) throw new Error('name at least one image');
  const tier = $({ env: { ...process.env, DOCKER_HOST: TIER_DOCKER_HOST } });
  const ids = [];
  for (const image of images) {
    const res = await tier`docker image inspect --format {{.Id}} ${image}`.quiet().nothrow();
    if (res.exitCode !== 0) throw new Error(`${image} is not on the docker tier's engine (${TIER_DOCKER_HOST}); run scripts/docker-engine.mjs images`);
    ids.push(res.stdout.trim());
  }
  const missing = [];
  for (const node of NODES) {
    const have = await Promise.all(ids.map(async (id) => (await nodeDocker(node)`docker image inspect ${id}`.quiet().nothrow()).exitCode === 0));
    if (have.some((h) => !h)) missing.push(node);
  }
  if (!missing.length) {
    // the ids are there, but a tag may be new (an image rebuilt with an id some node already has under another tag)
    await Promise.all(NODES.flatMap((node) => images.map((image, i) => nodeDocker(node)`docker tag ${ids[i]} ${image}`.quiet())));
    log(`images already on every node (${images.join(' ')})`);
    return;
  }
  const cache = path.join(ROOT, 'cache');
  await fs.mkdirp(cache);
  const key = ids.map((id) => id.replace('sha256:', '').slice(0, 12)).sort().join('-');
  const tar = path.join(cache, `images-${key}.tar`);
  if (!fs.existsSync(tar)) {
    const t0 = Date.now();
    // older tars hold images the tier has since rebuilt: one tar is kept
    for (const old of fs.readdirSync(cache).filter((f) => f.startsWith('images-'))) await fs.remove(path.join(cache, old));
    await tier`docker save -o ${`${tar}.tmp`} ${images}`;
    await fs.rename(`${tar}.tmp`, tar);
    log(`docker save ${images.join(' ')}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const t0 = Date.now();
  await Promise.all(missing.map((node) => nodeDocker(node)`docker load -q -i ${tar}`.quiet()));
  // the tags follow the tier's: a tag moved to a rebuilt image is moved on the nodes too
  await Promise.all(NODES.flatMap((node) => images.map((image, i) => nodeDocker(node)`docker tag ${ids[i]} ${image}`.quiet())));
  // and the images those tags left (untagged now) go, so the kept data roots do not grow rebuild by rebuild
  await Promise.all(missing.map((node) => nodeDocker(node)`docker image prune -f`.quiet().nothrow()));
  log(`docker load into ${missing.map((n) => n.name).join(' ')}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** A node lost: every process of it killed at once (dockerd, containerd, shims, containers). */
async function kill(name) {
  if (!NODES.some((n) => n.name === name)) throw new Error(`no node ${JSON.stringify(name)} (${NODES.map((n) => n.name).join(' ')})`);
  await killNode(name);
  log(`${name} killed`);
}

/** Exit 1 and one line each when anything start makes is still there. */
async function left() {
  const found = await leftovers();
  for (const line of found) process.stdout.write(`${line}\n`);
  process.exitCode = found.length ? 1 : 0;
}

const commands = { start, stop, status, leftovers: left, load: () => load(process.argv.slice(3)), kill: () => kill(process.argv[3]) };
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const cmd = process.argv[2];
  if (!commands[cmd]) {
    process.stderr.write('usage: node scripts/swarm-nodes.mjs start|stop|status|leftovers|load IMAGE…|kill NODE\n');
    process.exit(2);
  }
  try {
    await commands[cmd]();
  } catch (err) {
    process.stderr.write(`swarm-nodes ${cmd}: ${err.stderr?.trim() || err.message}\n`);
    process.exit(1);
  }
}
