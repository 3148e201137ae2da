import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { apiSettingsAdvice, missingApiSettings } from '../install-dir/api-settings.js';
import { HospitalApiError } from '../errors/index.js';

interface UpOptions extends GlobalOptions {
  dir?: string;
  demo?: boolean;
  foreground?: boolean;
}

/** `hospital-api up`: start the stack (native: under a supervisor) and wait until it answers. */
export function register(program: Command): void {
  program
    .command('up')
    .description(SUMMARIES.up)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--demo', 'require a demo installation (adds the DEMO platform stand-in)')
    // Internal: the detached supervisor process itself (started by `up`).
    .addOption(program.createOption('--foreground', 'run the supervisor in this process').hideHelp())
    .action(
      action<UpOptions>('up', async (options, io) => {
        const dir = options.dir ?? defaultInstallDir();
        const config = readInstallConfig(dir);
        if (options.demo && !config.demo) throw new HospitalApiError('ERR_RUNTIME_DEMO_REFUSED', { dir });
        const { openRuntime } = await import('../runtime/index.js');
        const runtime = await openRuntime(dir);
        if (options.foreground) return runtime.supervise();
        // an install from before the audit seal (issue 46): its own seal key, never the record signer's
        const { upgradeAuditSeal } = await import('../install/audit-seal-upgrade.js');
        const upgrade = upgradeAuditSeal(installPaths(dir), config);
        for (const c of upgrade.changes) io.log(`  ${c.change} ${c.path}`);
        if (!upgrade.sealed) io.warn(`no audit-seal key configured: the audit log is not sealed (rerun \`hospital-api install --dir ${dir}\` with --ca-key once, or --audit-seal-cert/--audit-seal-key)`);
        const started = Date.now();
        io.log(`Starting the ${runtime.name} stack in ${dir}${config.demo ? ' (DEMO installation)' : ''}…`);
        await runtime.up({ demo: options.demo === true });
        // Both runtimes hold the API back without its start settings: say so, with the command that sets them,
        // rather than leave an upgraded install (no PLATFORM_IDENTIFIER_SYSTEM yet) without its API unexplained.
        const missing = missingApiSettings(dir);
        if (missing.length > 0) {
          io.warn(`the Hospital API is held back: ${missing.join(', ')} not set in hospital-api.env; run ${apiSettingsAdvice(dir, missing).map((a) => `\`${a}\``).join(' and ')}`);
        }
        const components = await runtime.components();
        if (io.json) {
          io.out(JSON.stringify({ ok: true, command: 'up', result: { dir, runtime: runtime.name, components } }));
        } else {
          const { renderComponents } = await import('./status.js');
          await renderComponents(io, components);
          io.log(`Ready in ${((Date.now() - started) / 1000).toFixed(1)}s. Stop with \`hospital-api down\`.`);
        }
        return 0;
      }),
    );
}
