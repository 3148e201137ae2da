/**
 * The runtime seam is real (issue 25): outside src/runtime/, no code decides by
 * a runtime's name ('docker'/'native'/'swarm' as a string literal: a comparison, a
 * choice, a manifest kind) and nothing imports a runtime's internals
 * (src/runtime/{docker,native,systemd,swarm}/); what differs between runtimes comes
 * from the runtime or its profile (src/runtime/profile.ts). Comments do not
 * count. Two literals are the install directory's format itself and are
 * allowed by their exact line: the list of runtime names install.json accepts,
 * and the docker/ folder of the layout.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

const NAME_LITERAL = /(['"`])(docker|native|swarm)\1/;
const INTERNAL_IMPORT = /(?:from\s+|import\s*\(\s*)(['"`])[^'"`]*\bruntime\/(?:docker|native|systemd|swarm)\/[^'"`]*\1/;

/** file (relative to src/) → the exact lines allowed to hold a runtime name. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'install-dir/install-config.ts': ["export const RUNTIME_NAMES = ['docker', 'native', 'swarm'] as const;"],
  'install-dir/layout.ts': ["docker: join(root, 'docker'),"],
};

/** Source text with comments blanked, line numbers kept. */
function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '))
    .replace(/(^|\s)\/\/.*$/gm, '$1');
}

/** `file:line: text` for each line of `text` that `bad` flags. */
function offenders(file: string, text: string): string[] {
  const allowed = ALLOWED[file] ?? [];
  return withoutComments(text)
    .split('\n')
    .map((line, i) => ({ line: line.trim(), n: i + 1 }))
    .filter(({ line }) => INTERNAL_IMPORT.test(line) || (NAME_LITERAL.test(line) && !allowed.includes(line)))
    .map(({ line, n }) => `src/${file}:${n}: ${line}`);
}

function outsideRuntime(): Array<{ file: string; text: string }> {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(SRC, join(e.parentPath, e.name)).split(sep).join('/'))
    .filter((file) => !file.startsWith('runtime/'))
    .map((file) => ({ file, text: readFileSync(join(SRC, file), 'utf8') }));
}

describe('the runtime seam', () => {
  it('has no runtime-name branch and no import of a runtime internal outside src/runtime/', () => {
    const found = outsideRuntime().flatMap(({ file, text }) => offenders(file, text));
    expect(found, `decide through src/runtime/ (a Runtime method or profileOf(name)), not here:\n${found.join('\n')}`).toEqual([]);
  });

  it('flags what it is for, and not comments or the allowed lines', () => {
    expect(offenders('install/x.ts', "if (config.runtime === 'docker') {}")).toHaveLength(1);
    expect(offenders('install/x.ts', 'const r = "native";')).toHaveLength(1);
    expect(offenders('install/x.ts', "if (config.runtime === 'swarm') {}")).toHaveLength(1);
    expect(offenders('commands/x.ts', "const { f } = await import('../runtime/swarm/render.js');")).toHaveLength(1);
    expect(offenders('commands/x.ts', "const { f } = await import('../runtime/native/state.js');")).toHaveLength(1);
    expect(offenders('commands/x.ts', "import { f } from '../runtime/systemd/units.js';")).toHaveLength(1);
    expect(offenders('commands/x.ts', "import { openRuntime } from '../runtime/index.js';")).toEqual([]);
    expect(offenders('install/x.ts', "// config.runtime === 'docker'\n/* 'native' */ const a = 1;")).toEqual([]);
    expect(offenders('install/x.ts', "const help = 'docker or native';")).toEqual([]);
    expect(offenders('install-dir/layout.ts', "    docker: join(root, 'docker'),")).toEqual([]);
    expect(offenders('install-dir/layout.ts', "    native: join(root, 'native'),")).toHaveLength(1);
  });
});
