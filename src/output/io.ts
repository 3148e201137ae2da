/**
 * Two channels, as npm does it: results go to stdout, progress and logs to
 * stderr. With --json, stdout carries exactly one JSON document.
 */
import type { ChalkInstance } from 'chalk';
import { colourFor } from './colour.js';

export interface Io {
  /** True when the command was given --json. */
  json: boolean;
  /** True when the command was given -q/--quiet: no progress (log() is already silent). */
  quiet: boolean;
  /** Colour for stdout (a no-op unless colourLevel says so: src/output/colour.ts). */
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

let pipesGuarded = false;

/**
 * `hospital-api status | head`: once the reader has gone, writes fail with
 * EPIPE. That is not an error of the command: stop writing and exit quietly
 * with the command's own status, instead of dying on an unhandled 'error'.
 */
export function guardClosedPipes(): void {
  if (pipesGuarded) return;
  pipesGuarded = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') {
        stream.destroy();
        return;
      }
      throw err;
    });
  }
}

export function createIo(options: IoOptions = {}): Io {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  if (!options.stdout && !options.stderr) guardClosedPipes();
  let colour: ChalkInstance | undefined;
  return {
    json: options.json === true,
    quiet: options.quiet === true,
    get colour() {
      return (colour ??= colourFor(stdout as NodeJS.WriteStream));
    },
    out: (text) => {
      if (!(stdout as { destroyed?: boolean }).destroyed) stdout.write(text.endsWith('\n') ? text : text + '\n');
    },
    log: (text) => {
      if (!options.quiet) stderr.write(text.endsWith('\n') ? text : text + '\n');
    },
    warn: (text) => void stderr.write(colourFor(stderr as NodeJS.WriteStream).yellow(`warning: ${text}`) + '\n'),
  };
}
