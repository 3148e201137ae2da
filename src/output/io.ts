/**
 * Two channels, as npm does it: results go to stdout, progress and logs to
 * stderr. With --json, stdout carries exactly one JSON document.
 */
import type { ChalkInstance } from 'chalk';
import { colourFor } from './colour.js';

export interface Io {
  /** True when the command was given --json. */
  json: boolean;
  /** Colour for stdout (a no-op when stdout is not a TTY or NO_COLOR is set). */
  colour: ChalkInstance;
  /** Writes result text to stdout. */
  out(text: string): void;
  /** Writes a progress or log line to stderr (suppressed with --quiet). */
  log(text: string): void;
  /** Writes a warning to stderr, even with --quiet. */
  warn(text: string): void;
}

export interface IoOptions {
  json?: boolean;
  quiet?: boolean;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

export function createIo(options: IoOptions = {}): Io {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  let colour: ChalkInstance | undefined;
  return {
    json: options.json === true,
    get colour() {
      return (colour ??= colourFor(stdout as NodeJS.WriteStream));
    },
    out: (text) => void stdout.write(text.endsWith('\n') ? text : text + '\n'),
    log: (text) => {
      if (!options.quiet) stderr.write(text.endsWith('\n') ? text : text + '\n');
    },
    warn: (text) => void stderr.write(colourFor(stderr as NodeJS.WriteStream).yellow(`warning: ${text}`) + '\n'),
  };
}
