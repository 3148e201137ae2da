/**
 * The runtime seam is real (issue 25): outside src/runtime/, no code decides by
 * a runtime's name ('docker'/'native'/'swarm' as a string literal: a comparison, a
 * choice, a manifest kind) and nothing imports a runtime's internals
 * (src/runtime/{docker,native,systemd,swarm,container}/); what differs between runtimes comes
 * from the runtime or its profile (src/runtime/profile.ts). Comments do not
 * count. Two literals are the install directory's format itself and are
 * allowed by their exact line: the list of runtime names install.json accepts,
 * and the docker/ folder of the layout. And src/runtime/index.ts, the seam's face, exports
 * the seam only (issue 44): nothing it exports is a runtime internal handed on (a re-export
 * from one of src/runtime/'s folders, or a name imported from one and exported again).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

const NAME_LITERAL = /(['"`])(docker|native|swarm)\1/;
const INTERNAL_IMPORT = /(?:from\s+|import\s*\(\s*)(['"`])[^'"`]*\bruntime\/(?:docker|native|systemd|swarm|container)\/[^'"`]*\1/;

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

const INTERNAL_PATH = String.raw`\.\/(?:docker|native|systemd|swarm|container)\/[^'"\x60]*`;
const REEXPORT = new RegExp(String.raw`^export\b[^;]*\bfrom\s+(['"\x60])${INTERNAL_PATH}\1`);
const INTERNAL_NAMES = new RegExp(String.raw`^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+(['"\x60])${INTERNAL_PATH}\2`);

/** `line: text` for each export of the seam's face (`text`, src/runtime/index.ts) that hands on a runtime internal. */
function internalExports(text: string): string[] {
  const lines = withoutComments(text).split('\n');
  // local names of what is imported from the runtimes' folders (`a as b` → b)
  const internal = new Set(
    lines.flatMap((l) => (INTERNAL_NAMES.exec(l.trim())?.[1] ?? '').split(',').map((n) => n.replace(/^\s*type\s+/, '').split(/\s+as\s+/).pop()?.trim() ?? '').filter(Boolean)),
  );
  return lines
    .map((line, i) => ({ line: line.trim(), n: i + 1 }))
    .filter(({ line }) => {
      if (REEXPORT.test(line)) return true;
      const list = /^export\s+(?:type\s+)?\{([^}]*)\}\s*;?$/.exec(line)?.[1];
      if (list !== undefined) return list.split(',').some((n) => internal.has(n.replace(/^\s*type\s+/, '').split(/\s+as\s+/)[0]?.trim() ?? ''));
      const alias = /^export\s+(?:const|let|var)\s+\w+\s*(?::[^=]+)?=\s*(\w+)\s*;?$/.exec(line)?.[1];
      return alias !== undefined && internal.has(alias);
    })
    .map(({ line, n }) => `src/runtime/index.ts:${n}: ${line}`);
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

  it('src/runtime/index.ts exports the seam only', () => {
    const found = internalExports(readFileSync(join(SRC, 'runtime', 'index.ts'), 'utf8'));
    expect(found, `declare it in the seam (index.ts, types.ts, profiles.ts) instead of handing on an internal:\n${found.join('\n')}`).toEqual([]);
  });

  it('flags an internal the seam hands on, and not the seam\'s own exports', () => {
    expect(internalExports("export { recordedStack, type RecordedStack } from './native/recorded.js';")).toHaveLength(1);
    expect(internalExports("export { defaultUnitOptions, renderUnits, TARGET as SYSTEMD_TARGET } from './systemd/units.js';")).toHaveLength(1);
    expect(internalExports("export * from './container/images.js';")).toHaveLength(1);
    expect(internalExports("import { renderUnits } from './systemd/units.js';\nexport { renderUnits };")).toHaveLength(1);
    expect(internalExports("import { TARGET as T } from './systemd/units.js';\nexport const SYSTEMD_TARGET = T;")).toHaveLength(1);
    expect(internalExports("export { profileOf, siteEndpoints } from './profiles.js';")).toEqual([]);
    expect(internalExports("export type { RecordedStack } from './types.js';")).toEqual([]);
    expect(internalExports("import { renderUnits } from './systemd/units.js';\nexport function systemdUnits() { return renderUnits(); }")).toEqual([]);
    expect(internalExports("// export { renderUnits } from './systemd/units.js';")).toEqual([]);
  });

  it('flags what it is for, and not comments or the allowed lines', () => {
    expect(offenders('install/x.ts', "if (config.runtime === 'docker') {}")).toHaveLength(1);
    expect(offenders('install/x.ts', 'const r = "native";')).toHaveLength(1);
    expect(offenders('install/x.ts', "if (config.runtime === 'swarm') {}")).toHaveLength(1);
    expect(offenders('commands/x.ts', "const { f } = await import('../runtime/swarm/render.js');")).toHaveLength(1);
    expect(offenders('commands/x.ts', "const { f } = await import('../runtime/native/state.js');")).toHaveLength(1);
    expect(offenders('commands/x.ts', "import { f } from '../runtime/systemd/units.js';")).toHaveLength(1);
    expect(offenders('commands/x.ts', "import { IMAGES } from '../runtime/container/images.js';")).toHaveLength(1);
    expect(offenders('commands/x.ts', "import { openRuntime } from '../runtime/index.js';")).toEqual([]);
    expect(offenders('install/x.ts', "// config.runtime === 'docker'\n/* 'native' */ const a = 1;")).toEqual([]);
    expect(offenders('install/x.ts', "const help = 'docker or native';")).toEqual([]);
    expect(offenders('install-dir/layout.ts', "    docker: join(root, 'docker'),")).toEqual([]);
    expect(offenders('install-dir/layout.ts', "    native: join(root, 'native'),")).toHaveLength(1);
  });
});
