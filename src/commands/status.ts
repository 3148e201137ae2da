import type { Command } from 'commander';
import type { Io } from '../output/io.js';
import type { ComponentState } from '../runtime/types.js';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { renderTable } from '../output/table.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { certificateLifetimes, CERT_WARN_DAYS } from '../install-dir/certificate-lifetimes.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { latestSignedAcceptance } from '../install-dir/reports.js';

/** States in which a component runs: `status` exits 0 only when every component is in one. */
const RUNNING: ReadonlyArray<ComponentState['state']> = ['up', 'degraded'];
/** `systemctl status`'s code for an inactive unit (LSB "program is not running"). */
export const STATUS_NOT_RUNNING = 3;

interface StatusOptions extends GlobalOptions {
  dir?: string;
}

function uptime(seconds: number | undefined): string {
  if (seconds === undefined) return '-';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(s).padStart(2, '0')}s` : `${s}s`;
}

/** The human table shared by `status` and `up`. */
export async function renderComponents(io: Io, components: ComponentState[]): Promise<void> {
  const colour = (state: ComponentState['state']): string =>
    state === 'up' ? io.colour.green(state) : state === 'down' || state === 'exited' ? io.colour.red(state) : io.colour.yellow(state);
  // containers run images; native components are this toolkit's own processes
  const images = components.some((c) => c.image !== undefined);
  io.out(
    renderTable(
      ['COMPONENT', 'STATE', 'PID', 'UPTIME', 'RESTARTS', 'PORTS', ...(images ? ['IMAGE'] : []), 'VERSION', 'DETAIL'],
      components.map((c) => [
        c.name, colour(c.state), c.pid ? String(c.pid) : '-', uptime(c.uptimeSeconds), String(c.restarts ?? 0),
        (c.ports ?? []).join(','), ...(images ? [c.image ?? '-'] : []), c.version ?? '-', c.detail,
      ]),
    ),
  );
}

/** `hospital-api status`: pid, uptime, version, ports and health of each component; exit 3 when one is not running. */
export function register(program: Command): void {
  program
    .command('status')
    .description(SUMMARIES.status)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .action(
      action<StatusOptions>('status', async (options, io) => {
        const { openRuntime } = await import('../runtime/index.js');
        const dir = options.dir ?? defaultInstallDir();
        const runtime = await openRuntime(dir);
        const components = await runtime.components();
        const allUp = components.every((c) => c.state === 'up');
        // As `systemctl status` exits 3 for an inactive unit: 3 when a component is not running (down,
        // exited, starting, restarting). Degraded still runs and answers: 0, named below.
        const down = components.filter((c) => !RUNNING.includes(c.state)).map((c) => c.name);
        // Degraded components (the gateway serving its last good configuration) with the reason, for scripts and monitoring.
        const degraded = components.filter((c) => c.state === 'degraded').map((c) => ({ name: c.name, reason: c.detail }));
        const { supervisor, summary } = await runtime.supervision();
        // Days left on each certificate (issue 15); `cert renew` renews them.
        const certificates = certificateLifetimes(installPaths(dir));
        // The newest signed acceptance record and the schedule that writes them (issue 46): the state an auditor signs on.
        const newest = latestSignedAcceptance(installPaths(dir).reports);
        const acceptance = {
          everySeconds: readInstallConfig(dir).verifyEvery ?? null,
          newest: newest ? { record: newest.file, result: newest.accepted ? 'accepted' : 'rejected', testedAt: new Date(newest.testedAtMs).toISOString() } : null,
        };
        if (io.json) {
          io.out(JSON.stringify({ ok: true, command: 'status', result: { dir, runtime: runtime.name, allUp, down, degraded, supervisor, components, certificates, acceptance } }));
        } else {
          await renderComponents(io, components);
          for (const d of degraded) io.out(io.colour.yellow(`${d.name} is degraded: ${d.reason.replace(/^degraded: /, '')}`));
          const { renderCertificates } = await import('./cert.js');
          await renderCertificates(io, certificates, CERT_WARN_DAYS);
          if (summary) io.out(summary);
          const schedule = acceptance.everySeconds === null ? 'not scheduled (install --verify-every)' : `every ${acceptance.everySeconds} s`;
          io.out(
            acceptance.newest
              ? `acceptance: ${acceptance.newest.result === 'accepted' ? io.colour.green('ACCEPTED') : io.colour.red('REJECTED')} at ${acceptance.newest.testedAt} (${acceptance.newest.record}); ${schedule}`
              : `acceptance: no signed record yet (hospital-api verify); ${schedule}`,
          );
          if (down.length > 0) io.out(io.colour.red(`not running: ${down.join(', ')} (exit 3)`));
        }
        return down.length > 0 ? STATUS_NOT_RUNNING : 0;
      }),
    );
}
