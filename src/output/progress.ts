/**
 * Progress for long work, on stderr. On a TTY it redraws one line; elsewhere
 * (CI, pipes) it prints a line at most every `everyMs` so logs stay readable.
 */
export interface Progress {
  update(done: number, detail?: string): void;
  finish(detail?: string): void;
}

export interface ProgressOptions {
  /** How a count reads (formatBytes for bytes); plain numbers by default. */
  format?: (n: number) => string;
  /** --quiet: no progress at all. */
  quiet?: boolean;
  /** Where TERM is read (default process.env): a dumb terminal gets whole lines, no redraw escapes. */
  env?: Readonly<Record<string, string | undefined>>;
}

const SILENT: Progress = { update: () => undefined, finish: () => undefined };

export function createProgress(
  label: string,
  total: number | undefined,
  stream: NodeJS.WriteStream = process.stderr,
  everyMs = 2000,
  options: ProgressOptions = {},
): Progress {
  if (options.quiet) return SILENT;
  const format = options.format ?? String;
  // a terminal that redraws in place: a TTY whose TERM is not `dumb` (which has no cursor movement)
  const tty = stream.isTTY === true && (options.env ?? process.env).TERM !== 'dumb';
  let last = 0;
  const started = Date.now();
  const render = (done: number, detail?: string): string => {
    const pct = total ? ` ${Math.floor((done / total) * 100)}%` : '';
    const count = total ? `${format(done)}/${format(total)}` : format(done);
    const bar = total && tty ? ` [${'#'.repeat(Math.floor((done / total) * 20)).padEnd(20, '.')}]` : '';
    return `${label}${bar} ${count}${pct}${detail ? ` ${detail}` : ''}`;
  };
  return {
    update(done, detail) {
      const now = Date.now();
      if (tty) {
        if (now - last < 100) return;
        last = now;
        stream.write(`\r\x1b[K${render(done, detail)}`);
      } else if (now - last >= everyMs) {
        last = now;
        stream.write(render(done, detail) + '\n');
      }
    },
    finish(detail) {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      const text = `${label} done in ${secs}s${detail ? ` (${detail})` : ''}`;
      stream.write(tty ? `\r\x1b[K${text}\n` : `${text}\n`);
    },
  };
}
