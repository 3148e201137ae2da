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
        const { defaultInstallDir, installPaths } = await import('../install-dir/layout.js');
        const { openRuntime } = await import('../runtime/index.js');
        const { existsSync } = await import('node:fs');
        const dir = options.dir ?? defaultInstallDir();
        const paths = installPaths(dir);
        const { statePath } = await import('../runtime/native/state.js');
        const hasState = existsSync(statePath(dir));
        // `npm stop` on a fresh clone: nothing was installed, so nothing runs.
        if (!existsSync(paths.installJson) && !hasState) {
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: null } }));
          else io.out(`Nothing installed in ${dir}; nothing to stop.`);
          return 0;
        }
        let runtime;
        try {
          runtime = openRuntime(dir);
        } catch (err) {
          // A damaged (or missing) install.json must not keep a running stack up: run/state.json
          // records every pid the native supervisor started, and that is all stopping needs.
          if (!hasState) throw err;
          const { toHospitalApiError } = await import('../errors/index.js');
          io.warn(`${toHospitalApiError(err).message}; stopping the processes recorded in ${statePath(dir)}`);
          const { stopStack } = await import('../runtime/native/control.js');
          const stopped = await stopStack(dir);
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: 'native', fromState: true, stopped } }));
          else io.out(`Stopped the native stack in ${dir} (from run/state.json).`);
          return 0;
        }
        await runtime.down();
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: runtime.name } }));
        else io.out(`Stopped the ${runtime.name} stack in ${dir}.`);
        return 0;
      }),
    );
}
