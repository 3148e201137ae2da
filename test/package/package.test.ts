/**
 * `npm run package` (issue 22): the .deb and the tar.gz, built twice from this checkout, are
 * byte-identical; lintian (Debian's own checker) reports no error and no warning on the .deb; the
 * .deb holds the layout hospital IT gets (/usr/bin/hospital-api, the bundled Node, the app, the
 * Dockerfile the docker runtime builds from) and nothing of npm's or the host's; the tar.gz runs on
 * its own Node wherever it is unpacked. test/docker-engine/package.test.ts installs the .deb with apt.
 */
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

const REPO = join(import.meta.dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
const DEB = `hospital-api_${VERSION}_amd64.deb`;
const TARBALL = `hospital-api-${VERSION}-linux-x64.tar.gz`;
const supported = process.platform === 'linux' && process.arch === 'x64' && (await execa('dpkg-deb', ['--version'], { reject: false })).exitCode === 0;
const lintian = (await execa('lintian', ['--version'], { reject: false })).exitCode === 0;
const runs = [tempDir('hapi-release-a-'), tempDir('hapi-release-b-')];

afterAll(() => removeTempDirs());

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

describe.skipIf(!supported)('npm run package', () => {
  beforeAll(async () => {
    // dist/ as `npm ci` built it: never rebuilt here, under the CLI the other test files run
    for (const out of runs) {
      const r = await execa('node', [join(REPO, 'scripts', 'package.mjs'), '--out', out, '--no-build'], { cwd: REPO, reject: false, stdin: 'ignore' });
      if (r.exitCode !== 0) throw new Error(`package: ${r.stderr}`);
    }
  }, 1_200_000);

  it('two runs from one checkout give byte-identical files', () => {
    for (const dir of runs) expect(readdirSync(dir).sort()).toEqual([TARBALL, DEB].sort());
    expect(sha256(join(runs[0]!, DEB))).toBe(sha256(join(runs[1]!, DEB)));
    expect(sha256(join(runs[0]!, TARBALL))).toBe(sha256(join(runs[1]!, TARBALL)));
  });

  it('the .deb holds the toolkit, its own Node and the maintainer scripts, and nothing of npm or the host', async () => {
    const list = (await execa('dpkg-deb', ['--contents', join(runs[0]!, DEB)])).stdout.split('\n');
    const paths = list.map((l) => l.slice(l.indexOf('./') + 1));
    expect(list.find((l) => l.includes('./usr/bin/hospital-api '))).toContain('-> ../lib/hospital-api/bin/hospital-api');
    for (const p of ['/usr/lib/hospital-api/node/bin/node', '/usr/lib/hospital-api/app/dist/cli.js', '/usr/lib/hospital-api/app/Dockerfile',
      '/usr/lib/hospital-api/app/templates/compose.yaml', '/usr/share/doc/hospital-api/copyright', '/usr/share/man/man1/hospital-api.1.gz']) {
      expect(paths, p).toContain(p);
    }
    expect(paths.filter((p) => /node_modules\/(node-linux-|typescript\/|vitest\/|\.bin\/)|\.npmignore$|^\/usr\/lib\/hospital-api\/app\/(src|test)\//.test(p))).toEqual([]);
    for (const l of list) expect(l.startsWith('d') || l.startsWith('-') || l.startsWith('l'), l).toBe(true);
    expect(list.every((l) => l.includes(' root/root '))).toBe(true);
    const control = (await execa('dpkg-deb', ['--field', join(runs[0]!, DEB)])).stdout;
    expect(control).toContain(`Version: ${VERSION}`);
    expect(control).toMatch(/^Depends: .*adduser/m);
    expect(control).not.toMatch(/nodejs/);
  });

  it.skipIf(!lintian)('lintian reports no error and no warning', async () => {
    const r = await execa('lintian', ['--fail-on', 'error,warning', join(runs[0]!, DEB)], { reject: false });
    const findings = `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => /^[EW]: /.test(l));
    expect(findings).toEqual([]);
    expect(r.exitCode, r.stderr).toBe(0);
  }, 300_000);

  it('the tar.gz runs on its own Node wherever it is unpacked, with no Node on PATH', async () => {
    const dir = tempDir('hapi-unpacked-');
    await execa('tar', ['-xzf', join(runs[0]!, TARBALL), '-C', dir]);
    const bin = join(dir, `hospital-api-${VERSION}-linux-x64`, 'bin', 'hospital-api');
    // a PATH with the two tools the wrapper uses and nothing else: no node by any name
    const tools = tempDir('hapi-path-');
    for (const tool of ['readlink', 'dirname']) symlinkSync((await execa('sh', ['-c', `command -v ${tool}`])).stdout.trim(), join(tools, tool));
    const r = await execa(bin, ['--version'], { env: { PATH: tools }, extendEnv: false, reject: false });
    expect([r.exitCode, r.stdout.trim()], r.stderr).toEqual([0, VERSION]);
  });

  it("the package's Dockerfile is the repository's final stage, copying the compiled app in instead of building it", async () => {
    const tar = await execa('sh', ['-c', `dpkg-deb --fsys-tarfile '${join(runs[0]!, DEB)}' | tar -xOf - ./usr/lib/hospital-api/app/Dockerfile`]);
    const runtime = (text: string) => {
      const stages = text.split(/^FROM /m);
      return stages[stages.length - 1]!.split('\n').filter((l) => /^(ENV|WORKDIR|USER|EXPOSE|ENTRYPOINT|CMD) /.test(l));
    };
    const repo = runtime(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
    expect(repo.length).toBeGreaterThanOrEqual(7);
    expect(runtime(tar.stdout)).toEqual(repo);
    expect(tar.stdout.match(/^FROM /gm)).toHaveLength(1);
    expect(tar.stdout).toContain('COPY . /app/');
  });
});
