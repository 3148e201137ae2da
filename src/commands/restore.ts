import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';
import { resolve } from 'node:path';

interface RestoreFlags extends GlobalOptions {
  dir?: string;
  keyFile?: string;
}

/**
 * `hospital-api restore FILE`: rebuild an installation from a backup, into an
 * empty directory, after checking every part against the manifest (issue 15).
 */
export function register(program: Command): void {
  program
    .command('restore <file>')
    .description(SUMMARIES.restore)
    .option('--dir <dir>', 'install directory to create (default: $HOSPITAL_API_DIR or ./.hospital-api); must be empty or absent')
    .option('--key-file <file>', 'the key file the backup was made with (else HOSPITAL_API_BACKUP_PASSPHRASE or a typed passphrase)')
    .action(
      action<RestoreFlags>('restore', async (options, io, args) => {
        const { restoreBackup } = await import('../backup/restore.js');
        const dir = options.dir ?? defaultInstallDir();
        const result = await restoreBackup(resolve(args[0] as string), dir, options.keyFile ? { keyFile: options.keyFile } : {}, (t) => io.log(t));
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'restore', result }));
        io.out(`restored ${result.parts} parts of the backup of ${result.createdAt} into ${result.dir} (${result.seconds}s)`);
      }),
    );
}
