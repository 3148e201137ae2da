import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { readInstallConfig, writeInstallConfig } from '../install-dir/install-config.js';
import { writeIfChanged } from '../install-dir/write-if-changed.js';
import { join, resolve } from 'node:path';

interface SystemdFlags extends GlobalOptions {
  dir?: string;
  out?: string;
  user?: string;
  managed?: boolean;
  builtin?: boolean;
}

/**
 * `hospital-api systemd`: writes systemd units for a production native
 * install (issue 15; docs/operations.md). The built-in supervisor (`up`) stays
 * for the demo, development and hosts without systemd.
 */
export function register(program: Command): void {
  program
    .command('systemd')
    .description(SUMMARIES.systemd)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--out <dir>', 'where to write the units (default: <dir>/systemd/); copy them to /etc/systemd/system')
    .option('--user <name>', 'dedicated system user the components run as', 'hospital-api')
    .option('--managed', 'record that systemd runs this install: status, verify, up/down, restarts and reloads then use systemctl')
    .option('--builtin', 'record that the built-in supervisor (`up`) runs it again')
    .action(
      action<SystemdFlags>('systemd', async (options, io) => {
        const { systemdUnits } = await import('../runtime/index.js');
        const dir = installPaths(options.dir ?? defaultInstallDir()).root;
        const out = resolve(options.out ?? join(dir, 'systemd'));
        const config = readInstallConfig(dir);
        const { target: TARGET, units } = systemdUnits(dir, config, options.user);
        const files = units.map((u) => writeIfChanged(join(out, u.name), u.text));
        if (options.managed || options.builtin) {
          writeInstallConfig(dir, { ...config, supervisor: options.managed ? 'systemd' : 'builtin' });
          io.log(options.managed ? `${dir}: status, verify, up, down and reloads now go through systemctl` : `${dir}: run by the built-in supervisor (\`hospital-api up\`) again`);
        }
        const user = options.user ?? 'hospital-api';
        const steps = [
          `useradd --system --home-dir ${dir} --shell /usr/sbin/nologin ${user}   # once`,
          `chown -R ${user}:${user} ${dir}`,
          // written where systemd reads them already: nothing to copy
          ...(out === '/etc/systemd/system' ? [] : [`cp ${out}/*.service ${out}/${TARGET} /etc/systemd/system/`]),
          'systemctl daemon-reload',
          `hospital-api down --dir ${dir}   # if the built-in supervisor runs it now`,
          `systemctl enable --now ${TARGET}`,
          `hospital-api systemd --managed --dir ${dir}   # status, verify, rotate-key, cert renew through systemctl`,
          'journalctl -u "hospital-api-*" -f   # logs',
        ];
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'systemd', result: { out, units: files, steps } }));
        for (const f of files) io.out(`${f.change.padEnd(9)} ${f.path}`);
        io.log(['Then, as root:', ...steps.map((s) => `  ${s}`)].join('\n'));
      }),
    );
}
