/**
 * Terminal colour, decided once by `colourLevel` from the environment and whether the
 * stream is a terminal (https://no-color.org, https://force-color.org, clig.dev "Output"):
 *  - NO_COLOR set to anything (but the empty string, as no-color.org says): off, always;
 *  - FORCE_COLOR=0 or false: off; FORCE_COLOR=1/2/3 (or true, or empty): on at that level;
 *  - else TERM=dumb, or a stream that is not a TTY (a pipe, a file, CI logs): off;
 *  - else on (16 colours).
 * chalk is loaded on first use (require of an ES module, Node >= 22.12), so commands
 * that print no colour, `--help` among them, never pay for loading it.
 */
import { createRequire } from 'node:module';
import type { ChalkInstance } from 'chalk';

const require = createRequire(import.meta.url);
let chalk: typeof import('chalk') | undefined;

/** chalk's levels: 0 none, 1 16 colours, 2 256, 3 truecolor. */
export type ColourLevel = 0 | 1 | 2 | 3;

export interface ColourEnv {
  NO_COLOR?: string | undefined;
  FORCE_COLOR?: string | undefined;
  TERM?: string | undefined;
}

/** The colour level for a stream: pure, so every rule above has its test. */
export function colourLevel(env: ColourEnv, isTTY: boolean): ColourLevel {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return 0;
  const force = env.FORCE_COLOR?.trim().toLowerCase();
  if (force === '0' || force === 'false') return 0;
  if (force === '' || force === 'true' || force === '1') return 1;
  if (force === '2' || force === '3') return Number(force) as ColourLevel;
  if (env.TERM === 'dumb') return 0;
  return isTTY ? 1 : 0;
}

export function colourFor(stream: NodeJS.WriteStream | NodeJS.WritableStream, env: ColourEnv = process.env): ChalkInstance {
  const tty = 'isTTY' in stream && stream.isTTY === true;
  chalk ??= require('chalk') as typeof import('chalk');
  return new chalk.Chalk({ level: colourLevel(env, tty) });
}

/** The glyphs of check results, defined in one place. */
export const GLYPHS = {
  pass: '[✓]',
  warn: '[!]',
  fail: '[✗]',
  skip: '[-]',
  error: '[✗]',
} as const;
