import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { toHospitalApiError } from '../errors/index.js';

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
        const { openRuntime, recordedStack } = await import('../runtime/index.js');
        const dir = options.dir ?? defaultInstallDir();
        const paths = installPaths(dir);
        const recorded = recordedStack(dir);
        // `npm stop` on a fresh clone: nothing was installed, so nothing runs.
        if (!existsSync(paths.installJson) && !recorded) {
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: null } }));
          else io.out(`Nothing installed in ${dir}; nothing to stop.`);
          return 0;
        }
        let runtime;
        try {
          runtime = await openRuntime(dir);
        } catch (err) {
          // A damaged (or missing) install.json must not keep a running stack up: the runtime's
          // own record of what it started (native: run/state.json) is all stopping needs.
          if (!recorded) throw err;
          io.warn(`${toHospitalApiError(err).message}; stopping the processes recorded in ${recorded.file}`);
          const stopped = await recorded.stop();
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: recorded.runtime, fromState: true, stopped } }));
          else io.out(`Stopped the ${recorded.runtime} stack in ${dir} (from ${relative(paths.root, recorded.file)}).`);
          return 0;
        }
        await runtime.down();
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'down', result: { dir, runtime: runtime.name } }));
        else io.out(`Stopped the ${runtime.name} stack in ${dir}.`);
        return 0;
      }),
    );
}
