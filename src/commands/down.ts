import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface DownOptions extends GlobalOptions {
  dir?: string;
}

/** `hospital-api down`: SIGTERM, a bounded wait, then SIGKILL; no process or port left behind. */
export function register(program: Command): void {
  program
    .command('down')
    .description(SUMMARIES.down)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .action(
      action<DownOptions>('down', async (options, io) => {
        const { defaultInstallDir } = await import('../runtime/layout.js');
        const { openRuntime } = await import('../runtime/index.js');
        const { existsSync } = await import('node:fs');
        const { installPaths } = await import('../runtime/layout.js');
        const dir = options.dir ?? defaultInstallDir();
        // `npm stop` on a fresh clone: nothing was installed, so nothing runs.
        if (!existsSync(installPaths(dir).installJson)) {
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: null } }));
          else io.out(`Nothing installed in ${dir}; nothing to stop.`);
          return 0;
        }
        const runtime = openRuntime(dir);
        await runtime.down();
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: runtime.name } }));
        else io.out(`Stopped the ${runtime.name} stack in ${dir}.`);
        return 0;
      }),
    );
}
