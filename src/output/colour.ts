/**
 * Terminal colour: on only when the stream is a TTY and NO_COLOR is unset
 * (https://no-color.org). FORCE_COLOR is honoured by chalk itself.
 */
import { Chalk, type ChalkInstance } from 'chalk';

export function colourFor(stream: NodeJS.WriteStream | NodeJS.WritableStream): ChalkInstance {
  const noColor = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== '';
  const tty = 'isTTY' in stream && stream.isTTY === true;
  return new Chalk({ level: !noColor && tty ? 1 : 0 });
}

/** The glyphs of check results, defined in one place. */
export const GLYPHS = {
  pass: '[✓]',
  warn: '[!]',
  fail: '[✗]',
  skip: '[-]',
  error: '[✗]',
} as const;
