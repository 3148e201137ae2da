/**
 * Terminal colour: on only when the stream is a TTY and NO_COLOR is unset
 * (https://no-color.org). FORCE_COLOR is honoured by chalk itself.
 * chalk is loaded on first use (require of an ES module, Node >= 22.12), so commands
 * that print no colour, `--help` among them, never pay for loading it.
 */
import { createRequire } from 'node:module';
import type { ChalkInstance } from 'chalk';

const require = createRequire(import.meta.url);
let chalk: typeof import('chalk') | undefined;

export function colourFor(stream: NodeJS.WriteStream | NodeJS.WritableStream): ChalkInstance {
  const noColor = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '';
  const tty = 'isTTY' in stream && stream.isTTY === true;
  chalk ??= require('chalk') as typeof import('chalk');
  return new chalk.Chalk({ level: !noColor && tty ? 1 : 0 });
}

/** The glyphs of check results, defined in one place. */
export const GLYPHS = {
  pass: '[✓]',
  warn: '[!]',
  fail: '[✗]',
  skip: '[-]',
  error: '[✗]',
} as const;
