/**
 * Wraps a command handler: builds the Io from the global flags, turns anything
 * thrown into a coded error, prints it (human or JSON) and sets the exit code.
 * Handlers never call process.exit; cli.ts is the only place that does.
 */
import type { Command } from 'commander';
import { toHospitalApiError, withParams } from '../errors/index.js';
import { shellWord } from '../util/shell-word.js';
import { installPaths } from '../install-dir/layout.js';
import { createIo, type Io } from '../output/io.js';
import { reportError } from '../output/report-error.js';

export interface GlobalOptions {
  json?: boolean;
  quiet?: boolean;
}

/** A handler returns the exit code (0 when omitted). */
export type Handler<O> = (options: O, io: Io, args: string[]) => Promise<number | void>;

export function action<O extends GlobalOptions>(name: string, handler: Handler<O>) {
  return async (...params: unknown[]): Promise<void> => {
    const command = params[params.length - 1] as Command;
    const options = command.optsWithGlobals() as O;
    const args = command.args;
    const io = createIo({ json: options.json === true, quiet: options.quiet === true });
    try {
      const code = await handler(options, io, args);
      if (typeof code === 'number' && code !== 0) process.exitCode = code;
    } catch (err) {
      // a hint naming another command says which install it means: the one this command ran on
      const dir = command.options.some((o) => o.long === '--dir') ? (options as { dir?: string }).dir ?? process.env.HOSPITAL_API_DIR : undefined;
      const error = dir ? withParams(toHospitalApiError(err), { dirFlag: ` --dir ${shellWord(installPaths(dir).root)}` }) : toHospitalApiError(err);
      reportError(io, name, error);
      if (error.code === 'ERR_INTERNAL' && err instanceof Error && process.env.HOSPITAL_API_DEBUG) {
        process.stderr.write(`${err.stack ?? ''}\n`);
      }
      process.exitCode = error.exit;
    }
  };
}
