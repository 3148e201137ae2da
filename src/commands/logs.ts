import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface LogsOptions extends GlobalOptions {
  dir?: string;
  follow?: boolean;
  lines?: string;
}

/** `hospital-api logs [component] [-f]`: the native components' logs from <dir>/logs/. */
export function register(program: Command): void {
  program
    .command('logs')
    .description(SUMMARIES.logs)
    .argument('[component]', 'one component; all when omitted')
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('-f, --follow', 'keep printing what is appended')
    .option('-n, --lines <n>', 'lines of history to print', '100')
    .action(
      action<LogsOptions>('logs', async (options, io, args) => {
        const { defaultInstallDir } = await import('../install-dir/layout.js');
        const { readInstallConfig } = await import('../install-dir/install-config.js');
        const { componentSpecs } = await import('../runtime/native/components.js');
        const { followLogs, logPath, tailLog } = await import('../runtime/native/logs.js');
        const { HospitalApiError } = await import('../errors/index.js');
        const dir = options.dir ?? defaultInstallDir();
        const config = readInstallConfig(dir);
        const lines = Number(options.lines ?? '100');
        if (!Number.isInteger(lines) || lines < 0) throw new HospitalApiError('ERR_USAGE', { detail: `--lines must be a whole number, got "${options.lines}"` });
        if (config.runtime === 'docker') {
          throw new HospitalApiError('ERR_USAGE', { detail: `the docker runtime keeps its logs in Docker: run \`docker compose --project-directory ${dir}/docker logs\`` });
        }
        const known = [...componentSpecs(dir, config).map((s) => s.name), 'supervisor'];
        const wanted = args[0] ? [args[0]] : known;
        for (const name of wanted) {
          if (!known.includes(name)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component: name, known: known.join(', ') });
        }
        const paths = Object.fromEntries(wanted.map((n) => [n, logPath(dir, n)]));
        const prefix = (name: string, text: string): string =>
          wanted.length === 1 ? text : text.replace(/^(?=.)/gm, io.colour.cyan(`${name.padEnd(10)}| `));
        for (const [name, path] of Object.entries(paths)) {
          const text = tailLog(path, lines);
          if (text) process.stdout.write(prefix(name, text));
        }
        if (!options.follow) return 0;
        const abort = new AbortController();
        process.once('SIGINT', () => abort.abort());
        process.once('SIGTERM', () => abort.abort());
        await followLogs(paths, (name, text) => void process.stdout.write(prefix(name, text)), abort.signal);
        return 0;
      }),
    );
}
