import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';

interface UpgradeFlags extends GlobalOptions {
  dir?: string;
  keyFile?: string;
  rollback?: boolean;
}

/** `hospital-api upgrade`: migrate an older install directory in place, after an automatic backup (issue 15). */
export function register(program: Command): void {
  program
    .command('upgrade')
    .description(SUMMARIES.upgrade)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--key-file <file>', "the backup's key file (else HOSPITAL_API_BACKUP_PASSPHRASE or a typed passphrase)")
    .option('--rollback', 'only roll back an upgrade that was interrupted')
    .action(
      action<UpgradeFlags>('upgrade', async (options, io) => {
        const { upgradeInstall } = await import('../maintenance/upgrade.js');
        const result = await upgradeInstall(
          options.dir ?? defaultInstallDir(),
          { ...(options.keyFile ? { keyFile: options.keyFile } : {}), rollbackOnly: options.rollback === true },
          (t) => io.log(t),
        );
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'upgrade', result }));
        io.out(result.from === result.to ? `${result.dir}: format ${result.to}${result.rolledBack ? ' (interrupted upgrade rolled back)' : ''}` : `${result.dir}: format ${result.from} → ${result.to}; backup ${result.backup}`);
      }),
    );
}
