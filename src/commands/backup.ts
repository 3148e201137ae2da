import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';
import { renderTable } from '../output/table.js';

interface BackupFlags extends GlobalOptions {
  dir?: string;
  out?: string;
  keyFile?: string;
}

/**
 * `hospital-api backup`: one encrypted archive of everything needed to rebuild
 * the site, taken while it serves (issue 15; docs/operations.md).
 */
export function register(program: Command): void {
  program
    .command('backup')
    .description(SUMMARIES.backup)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--out <file>', 'archive to write (default: <dir>/backups/hospital-api-<UTC time>.tar); never overwritten')
    .option('--key-file <file>', 'encrypt with this key file (32+ bytes) instead of HOSPITAL_API_BACKUP_PASSPHRASE or a typed passphrase')
    .action(
      action<BackupFlags>('backup', async (options, io) => {
        const { openRuntime } = await import('../runtime/index.js');
        const { createBackup } = await import('../backup/create.js');
        const dir = options.dir ?? defaultInstallDir();
        const result = await createBackup(
          await openRuntime(dir),
          dir,
          { ...(options.out ? { out: options.out } : {}), ...(options.keyFile ? { keyFile: options.keyFile } : {}) },
          (t) => io.log(t),
        );
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'backup', result }));
        io.out(renderTable(['PART', 'KIND', 'BYTES', 'SHA-256'], result.parts.map((p) => [p.path, p.kind, String(p.bytes), p.sha256.slice(0, 16)])).trimEnd());
        io.out(`${result.out} (${result.bytes} bytes, ${result.seconds}s${result.fhir ? `, ${result.fhir.resources} FHIR resources` : ''})`);
      }),
    );
}
