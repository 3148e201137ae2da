import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';
import { HospitalApiError } from '../errors/index.js';

interface LogsOptions extends GlobalOptions {
  dir?: string;
  follow?: boolean;
  lines?: string;
}

/** `hospital-api logs [component] [-f]`: the components' logs, as the install's runtime keeps them. */
export function register(program: Command): void {
  program
    .command('logs')
    .description(SUMMARIES.logs)
    .argument('[component]', 'one component (its name in `status`, or its role: api, gateway, fhir); all when omitted')
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('-f, --follow', 'keep printing what is appended')
    .option('-n, --lines <n>', 'lines of history to print', '100')
    .action(
      action<LogsOptions>('logs', async (options, io, args) => {
        const { openRuntime } = await import('../runtime/index.js');
        const dir = options.dir ?? defaultInstallDir();
        const runtime = await openRuntime(dir);
        // the role names (api, gateway, fhir) work on every runtime, as hints everywhere say them: `logs gateway` is kong's on docker
        const { readInstallConfig } = await import('../install-dir/install-config.js');
        const { profileOf } = await import('../runtime/profiles.js');
        const names = profileOf(readInstallConfig(dir).runtime).componentNames;
        const component = args[0] !== undefined && Object.hasOwn(names, args[0]) ? names[args[0] as keyof typeof names] : args[0];
        const lines = Number(options.lines ?? '100');
        if (!Number.isInteger(lines) || lines < 0) throw new HospitalApiError('ERR_USAGE', { detail: `--lines must be a whole number, got "${options.lines}"` });
        // one component's lines as they are; several, each line prefixed with its component
        const prefix = (name: string, text: string): string =>
          component ? text : text.replace(/^(?=.)/gm, io.colour.cyan(`${name.padEnd(10)}| `));
        const abort = new AbortController();
        if (options.follow) {
          process.once('SIGINT', () => abort.abort());
          process.once('SIGTERM', () => abort.abort());
        }
        await runtime.logs({
          ...(component ? { component } : {}),
          lines,
          follow: options.follow === true,
          signal: abort.signal,
          write: (name, text) => void process.stdout.write(prefix(name, text)),
        });
        return 0;
      }),
    );
}
