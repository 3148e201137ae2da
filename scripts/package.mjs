#!/usr/bin/env node
/**
 * `npm run package [-- --arch amd64|arm64] [--version V] [--out DIR] [--fast] [--deb-only] [--no-build]`: the toolkit as hospital IT
 * installs it, written to release/ (ignored by git):
 *
 *   hospital-api_<version>_<arch>.deb            apt install ./…; /usr/lib/hospital-api, /usr/bin/hospital-api
 *   hospital-api-<version>-linux-<cpu>.tar.gz    unpack anywhere; bin/hospital-api
 *
 * Both hold one tree: bin/hospital-api (packaging/hospital-api.sh), node/ (the Node.js binary the
 * repository pins, package.json optionalDependencies node-linux-<cpu>, its sha512 checked against the
 * lockfile, stripped), app/ (dist/, templates/, bin/, package.json, the production node_modules and the
 * Dockerfile the docker runtime builds its API image from: see packageDockerfile). Nothing in it comes
 * from the host's Node. Two runs from the same commit give byte-identical files: every timestamp is
 * SOURCE_DATE_EPOCH (the commit's time unless set; https://reproducible-builds.org/specs/source-date-epoch/),
 * owners are root, modes are fixed, archives are sorted by name. docs/packaging.md has the rest.
 */
import { $, fs, path } from 'zx';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

$.verbose = false;
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PACKAGING = path.join(REPO, 'packaging');
/** Debian's architecture names and Node's (Debian Policy §5.6.8; process.arch). */
const ARCHES = { amd64: 'x64', arm64: 'arm64' };

function parseArgs(argv) {
  const out = { arch: Object.keys(ARCHES).find((a) => ARCHES[a] === process.arch) ?? 'amd64', version: undefined, out: path.join(REPO, 'release'), fast: false, debOnly: false, build: true };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    // --fast: gzip -1 instead of xz (tests that install the package, not ship it); --deb-only: no tar.gz;
    // --no-build: package dist/ as it is (tests, which must not replace dist/ under the CLI other tests run)
    if (flag === '--fast') out.fast = true;
    else if (flag === '--deb-only') out.debOnly = true;
    else if (flag === '--no-build') out.build = false;
    else if (flag === '--arch' && value) out.arch = value;
    else if (flag === '--version' && value) out.version = value;
    else if (flag === '--out' && value) out.out = path.resolve(value);
    else throw new Error(`usage: npm run package [-- --arch amd64|arm64] [--version V] [--out DIR] [--fast] [--deb-only] [--no-build]; not understood: ${flag}`);
    if (!['--fast', '--deb-only', '--no-build'].includes(flag)) i++;
  }
  if (!ARCHES[out.arch]) throw new Error(`--arch must be one of ${Object.keys(ARCHES).join(', ')}`);
  return out;
}

const args = parseArgs(process.argv.slice(2));
const cpu = ARCHES[args.arch];
const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8'));
const version = args.version ?? pkg.version;
// Debian Policy §5.6.12: upstream version characters
if (!/^[0-9][A-Za-z0-9.+~-]*$/.test(version)) throw new Error(`--version ${version}: not a Debian version`);
const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? (await $({ cwd: REPO })`git log -1 --format=%ct`).stdout.trim());
if (!Number.isInteger(epoch) || epoch <= 0) throw new Error('SOURCE_DATE_EPOCH: not a timestamp');
const env = { ...process.env, SOURCE_DATE_EPOCH: String(epoch), TZ: 'UTC', LC_ALL: 'C.UTF-8' };

const work = await fs.mkdtemp(path.join(REPO, '.package-'));
try {
  progress(`building ${version} for ${args.arch} (SOURCE_DATE_EPOCH=${epoch})`);
  const tree = path.join(work, 'tree');
  await buildTree(tree);
  await fs.mkdirp(args.out);
  const deb = await buildDeb(tree, path.join(work, 'deb'));
  const tarball = args.debOnly ? null : await buildTarball(tree, path.join(work, 'tar'));
  for (const f of [deb, tarball].filter(Boolean)) {
    const sha = createHash('sha256').update(fs.readFileSync(f)).digest('hex');
    process.stdout.write(`${path.relative(process.cwd(), f)}  ${(fs.statSync(f).size / 2 ** 20).toFixed(1)} MiB  sha256 ${sha}\n`);
  }
} finally {
  await fs.remove(work);
}

function progress(text) {
  process.stderr.write(`package: ${text}\n`);
}

/** The pinned Node binary for `cpu`: the installed optional dependency, or the registry's tarball, checked against the lockfile. */
async function pinnedNode(dest) {
  const name = `node-linux-${cpu}`;
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry?.version || !entry.integrity) throw new Error(`package-lock.json pins no ${name}`);
  const installed = path.join(REPO, 'node_modules', name, 'bin', 'node');
  let source = installed;
  let license = path.join(REPO, 'node_modules', name, 'LICENSE');
  if (!fs.existsSync(installed)) {
    // another architecture's runtime: fetched as npm would, and held to the same integrity
    const dl = path.join(work, 'node-dl');
    await fs.mkdirp(dl);
    const packed = JSON.parse((await $({ cwd: dl })`npm pack ${`${name}@${entry.version}`} --json --silent`).stdout)[0];
    const file = path.join(dl, packed.filename);
    const actual = `sha512-${createHash('sha512').update(fs.readFileSync(file)).digest('base64')}`;
    if (actual !== entry.integrity) throw new Error(`${name}@${entry.version}: integrity ${actual} is not the lockfile's ${entry.integrity}`);
    await $`tar -xzf ${file} -C ${dl}`;
    source = path.join(dl, 'package', 'bin', 'node');
    license = path.join(dl, 'package', 'LICENSE');
  } else {
    const v = (await $`${installed} --version`).stdout.trim();
    if (v !== `v${entry.version}`) throw new Error(`${installed} is ${v}, the lockfile pins ${entry.version}: run npm ci`);
  }
  await fs.mkdirp(path.join(dest, 'bin'));
  await fs.copy(source, path.join(dest, 'bin', 'node'));
  // Debian's strip knows only the build machine's architecture; another one's binary stays as it is
  const strip = cpu === process.arch ? 'strip' : args.arch === 'arm64' ? 'aarch64-linux-gnu-strip' : 'x86_64-linux-gnu-strip';
  if ((await $`command -v ${strip}`.nothrow()).exitCode === 0) {
    await $`${strip} --strip-unneeded --remove-section=.comment --remove-section=.note ${path.join(dest, 'bin', 'node')}`;
  } else {
    progress(`no ${strip}: node stays unstripped`);
  }
  await fs.copy(license, path.join(dest, 'LICENSE'));
}

async function buildTree(tree) {
  const app = path.join(tree, 'app');
  if (args.build) {
    progress('compiling dist/');
    await $({ cwd: REPO, env })`npm run build --silent`;
  } else if (!fs.existsSync(path.join(REPO, 'dist', 'cli.js'))) {
    throw new Error('--no-build: there is no dist/ to package (npm run build)');
  }
  await fs.mkdirp(path.join(app, 'bin'));
  for (const f of ['hospital-api.js', 'node-check.cjs']) await fs.copy(path.join(REPO, 'bin', f), path.join(app, 'bin', f));
  await fs.copy(path.join(REPO, 'dist'), path.join(app, 'dist'));
  await fs.copy(path.join(REPO, 'templates'), path.join(app, 'templates'));
  await fs.copy(path.join(REPO, 'package-lock.json'), path.join(app, 'package-lock.json'));
  await fs.writeFile(path.join(app, 'package.json'), JSON.stringify({ ...pkg, version, scripts: undefined, devDependencies: undefined }, null, 2) + '\n');
  await fs.writeFile(path.join(app, 'Dockerfile'), packageDockerfile());
  await fs.copy(path.join(PACKAGING, 'dockerignore'), path.join(app, '.dockerignore'));
  progress('production node_modules (npm ci --omit=dev --omit=optional)');
  // the lockfile's production packages only; no install scripts (none is needed: no native addon)
  await $({ cwd: app, env })`npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error`;
  await fs.remove(path.join(app, 'node_modules', '.bin'));
  // npm's and git's own files, packages' shell scripts (their CI) and HTML pages (their docs, which load
  // scripts from CDNs) have no place in an installed package: lintian's package-contains-npm-ignore-file,
  // wrong-path-for-interpreter and privacy-breach-generic. No module loads any of them.
  for (const f of await listFiles(path.join(app, 'node_modules'))) {
    if (/(^|\/)\.(npmignore|gitignore|gitattributes|travis\.yml|eslintrc(\.\w+)?)$|\.(sh|html?)$/.test(f)) await fs.remove(path.join(app, 'node_modules', f));
  }
  progress('pinned Node.js runtime');
  await pinnedNode(path.join(tree, 'node'));
  await fs.mkdirp(path.join(tree, 'bin'));
  await fs.copy(path.join(PACKAGING, 'hospital-api.sh'), path.join(tree, 'bin', 'hospital-api'));
  await normalise(tree, ['bin/hospital-api', 'node/bin/node']);
}

/**
 * The Dockerfile of the package's app/: the repository's Dockerfile without its build stage. The
 * package's app/ already holds what that stage makes (dist/, the production node_modules; JavaScript
 * only), so its final stage, the same settings line for line, copies app/ itself in.
 */
function packageDockerfile() {
  const text = fs.readFileSync(path.join(REPO, 'Dockerfile'), 'utf8');
  const arg = /^ARG NODE_IMAGE=.*$/m.exec(text)?.[0];
  const final = text.slice(text.lastIndexOf('\nFROM ') + 1);
  const copy = 'COPY --from=build /out/ /app/';
  if (!arg || !final.startsWith('FROM ${NODE_IMAGE}') || !final.includes(copy)) throw new Error('Dockerfile: no NODE_IMAGE argument, or its last stage does not copy /out/ from the build stage');
  return [
    '# The hospital-api image, as the docker runtime builds it from an installed package (this folder):',
    "# the repository's Dockerfile without its build stage, whose output this folder already holds",
    '# (written by scripts/package.mjs; the .dockerignore beside it keeps keys and env files out).',
    arg,
    '',
    final.replace(copy, 'COPY . /app/'),
  ].join('\n');
}

/** Every file below `dir`, relative, sorted. */
async function listFiles(dir) {
  const out = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile() || e.isSymbolicLink()) out.push(path.relative(dir, path.join(e.parentPath, e.name)));
  }
  return out.sort();
}

/** Directories 0755, files 0644 except the named executables (0755): the modes on disk are what the archives keep. */
async function normalise(root, executables) {
  for (const e of await fs.readdir(root, { recursive: true, withFileTypes: true })) {
    const p = path.join(e.parentPath, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) await fs.chmod(p, 0o755);
    else await fs.chmod(p, executables.includes(path.relative(root, p)) ? 0o755 : 0o644);
  }
  await fs.chmod(root, 0o755);
}

async function buildDeb(tree, stage) {
  progress('hospital-api .deb');
  const lib = path.join(stage, 'usr', 'lib', 'hospital-api');
  await fs.mkdirp(path.dirname(lib));
  await fs.copy(tree, lib, { preserveTimestamps: false });
  await fs.mkdirp(path.join(stage, 'usr', 'bin'));
  await fs.symlink('../lib/hospital-api/bin/hospital-api', path.join(stage, 'usr', 'bin', 'hospital-api'));
  const doc = path.join(stage, 'usr', 'share', 'doc', 'hospital-api');
  await fs.mkdirp(doc);
  await fs.writeFile(path.join(doc, 'copyright'), copyright());
  // a native package's changelog is changelog.gz (Debian Policy §12.7); gzip -n stores no name or time
  await fs.writeFile(path.join(doc, 'changelog'), changelog());
  await $`gzip -9n ${path.join(doc, 'changelog')}`;
  const man = path.join(stage, 'usr', 'share', 'man', 'man1');
  await fs.mkdirp(man);
  await fs.writeFile(path.join(man, 'hospital-api.1'), await manPage(tree));
  await $`gzip -9n ${path.join(man, 'hospital-api.1')}`;
  const overrides = path.join(stage, 'usr', 'share', 'lintian', 'overrides');
  await fs.mkdirp(overrides);
  await fs.copy(path.join(PACKAGING, 'deb', 'lintian-overrides'), path.join(overrides, 'hospital-api'));
  const control = path.join(stage, 'DEBIAN');
  await fs.mkdirp(control);
  for (const s of ['postinst', 'prerm', 'postrm']) await fs.copy(path.join(PACKAGING, 'deb', s), path.join(control, s));
  await normalise(stage, ['usr/lib/hospital-api/bin/hospital-api', 'usr/lib/hospital-api/node/bin/node', 'DEBIAN/postinst', 'DEBIAN/prerm', 'DEBIAN/postrm']);
  const files = (await listFiles(stage)).filter((f) => !f.startsWith('DEBIAN/'));
  const sums = [];
  let bytes = 0;
  for (const f of files) {
    const abs = path.join(stage, f);
    if (fs.lstatSync(abs).isSymbolicLink()) continue;
    const data = fs.readFileSync(abs);
    bytes += data.length;
    sums.push(`${createHash('md5').update(data).digest('hex')}  ${f}\n`);
  }
  await fs.writeFile(path.join(control, 'md5sums'), sums.join(''));
  await fs.writeFile(path.join(control, 'control'), controlFile(Math.ceil(bytes / 1024)));
  await normalise(control, ['postinst', 'prerm', 'postrm']);
  const out = path.join(args.out, `hospital-api_${version}_${args.arch}.deb`);
  const compression = args.fast ? ['-Zgzip', '-z1'] : ['-Zxz'];
  await $({ env })`dpkg-deb --root-owner-group ${compression} --build ${stage} ${out}`;
  return out;
}

async function buildTarball(tree, stage) {
  progress('hospital-api .tar.gz');
  const name = `hospital-api-${version}-linux-${cpu}`;
  await fs.mkdirp(stage);
  await fs.copy(tree, path.join(stage, name));
  const out = path.join(args.out, `${name}.tar.gz`);
  const tar = path.join(stage, `${name}.tar`);
  await $({ cwd: stage, env })`tar --sort=name --mtime=@${epoch} --clamp-mtime --owner=0 --group=0 --numeric-owner --format=gnu -cf ${tar} ${name}`;
  await $`gzip ${args.fast ? '-1n' : '-9n'} ${tar}`;
  await fs.move(`${tar}.gz`, out, { overwrite: true });
  return out;
}

function controlFile(installedKiB) {
  const nodeVersion = lock.packages[`node_modules/node-linux-${cpu}`].version;
  return [
    'Package: hospital-api',
    `Version: ${version}`,
    `Architecture: ${args.arch}`,
    'Maintainer: hospital-api maintainers <hospital-api@packages.invalid>',
    `Installed-Size: ${installedKiB}`,
    // the bundled node's ELF needs (packaging notes: GLIBC_2.28, GLIBCXX_3.4.21), adduser for postinst
    'Depends: adduser, libc6 (>= 2.28), libgcc-s1 (>= 3.0), libstdc++6 (>= 5.2)',
    'Recommends: openssl, systemd',
    'Suggests: docker.io, docker-compose',
    'Section: admin',
    'Priority: optional',
    `Description: hospital side of a health-data exchange (FHIR gateway, API, acceptance)`,
    ' hospital-api installs, runs and proves the hospital side of a health-data',
    ' exchange: it provisions the FHIR gateway (Kong, or its embedded',
    ' Kong-compatible gateway) through its admin API, runs the Hospital API that',
    " answers the platform's patient requests, and runs the acceptance checks over",
    ' CA-verified HTTPS, writing a signed test record.',
    ' .',
    ` The package bundles its own Node.js ${nodeVersion} in /usr/lib/hospital-api/node;`,
    " it never uses the host's Node.",
    '',
  ].join('\n');
}

function copyright() {
  return [
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/',
    'Upstream-Name: hospital-api',
    '',
    'Files: *',
    `Copyright: 2025-${new Date(epoch * 1000).getUTCFullYear()} hospital-api contributors`,
    'License: Apache-2.0',
    '',
    'Files: usr/lib/hospital-api/node/*',
    'Copyright: Node.js contributors and others',
    'License: Expat',
    ' The Node.js runtime, as released by the Node.js project; its full license,',
    ' with the licenses of the libraries it embeds, is',
    ' /usr/lib/hospital-api/node/LICENSE.',
    '',
    'Files: usr/lib/hospital-api/app/node_modules/*',
    'Copyright: the authors of each package',
    'License: various',
    ' Each npm package states its own license in its package.json and license file',
    ' in its own folder (MIT, ISC, BSD-2-Clause, BSD-3-Clause, Apache-2.0).',
    '',
    'License: Apache-2.0',
    ' On Debian systems, the full text of the Apache License, Version 2.0 is in',
    ' /usr/share/common-licenses/Apache-2.0.',
    '',
    'License: Expat',
    ' Permission is hereby granted, free of charge, to any person obtaining a copy',
    ' of this software and associated documentation files (the "Software"), to deal',
    ' in the Software without restriction, including without limitation the rights',
    ' to use, copy, modify, merge, publish, distribute, sublicense, and/or sell',
    ' copies of the Software, and to permit persons to whom the Software is',
    ' furnished to do so, subject to the following conditions:',
    ' .',
    ' The above copyright notice and this permission notice shall be included in',
    ' all copies or substantial portions of the Software.',
    ' .',
    ' THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR',
    ' IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,',
    ' FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE',
    ' AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER',
    ' LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,',
    ' OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN',
    ' THE SOFTWARE.',
    '',
  ].join('\n');
}

/**
 * hospital-api(1): the CLI's own --help (every command and option), run on the bundled Node, or for
 * another architecture on the Node running this script (app/ is JavaScript only: the same text).
 */
async function manPage(tree) {
  const node = cpu === process.arch ? path.join(tree, 'node', 'bin', 'node') : process.execPath;
  const help = (await $({ env: { ...env, NO_COLOR: '1' } })`${node} ${path.join(tree, 'app', 'bin', 'hospital-api.js')} --help`).stdout;
  const date = new Date(epoch * 1000).toISOString().slice(0, 10);
  const escape = (t) => t.replace(/\\/g, '\\e').replace(/^([.'])/gm, '\\&$1');
  return [
    `.TH HOSPITAL-API 1 "${date}" "hospital-api ${version}" "User Commands"`,
    '.SH NAME',
    'hospital-api \\- install, run and prove the hospital side of a health-data exchange',
    '.SH SYNOPSIS',
    '.B hospital-api',
    '.I command',
    '[\\fIoptions\\fR]',
    '.SH DESCRIPTION',
    'The default install directory of the packaged toolkit is',
    '.IR /var/lib/hospital-api ;',
    '.B hospital-api',
    '.I command',
    '.B \\-\\-help',
    'describes each command.',
    '.PP',
    '.nf',
    escape(help.trimEnd()),
    '.fi',
    '.SH FILES',
    '.TP',
    '.I /var/lib/hospital-api',
    'the default installation: settings, keys, the FHIR data of the native runtime, signed records',
    '.TP',
    '.I /usr/lib/hospital-api/node',
    'the Node.js runtime the package bundles',
    '.SH SEE ALSO',
    '.IR /usr/share/doc/hospital-api/copyright',
    '',
  ].join('\n');
}

function changelog() {
  // RFC 5322 date of SOURCE_DATE_EPOCH (deb-changelog(5))
  const date = new Date(epoch * 1000).toUTCString().replace('GMT', '+0000');
  return [`hospital-api (${version}) stable; urgency=medium`, '', `  * Release ${version}; see README.md of the source for what changed.`, '', ` -- hospital-api maintainers <hospital-api@packages.invalid>  ${date}`, ''].join('\n');
}
