/** Reads and follows the per-component logs in <dir>/logs/ (`hospital-api logs`). */
import { join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { AUDIT_LOG_COMPONENT, type LogsOptions } from '../types.js';
import { componentSpecs } from './components.js';
import { followLogs, tailLog } from '../log-files.js';
import { nativeAuditLog } from './profile.js';

export function logPath(dir: string, component: string): string {
  return join(installPaths(dir).logs, `${component}.log`);
}

/** The native runtime's logs(): each component's file and the supervisor's. */
export async function nativeLogs(dir: string, config: InstallConfig, o: LogsOptions): Promise<void> {
  // acceptance: the scheduled acceptance runs (install --verify-every, acceptance-schedule.ts)
  const known = [...componentSpecs(dir, config).map((s) => s.name), 'supervisor', ...(config.verifyEvery ? ['acceptance'] : []), AUDIT_LOG_COMPONENT];
  const wanted = o.component ? [o.component] : known;
  for (const name of wanted) {
    if (!known.includes(name)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component: name, known: known.join(', ') });
  }
  const audit = nativeAuditLog(installPaths(dir));
  const paths = Object.fromEntries(wanted.map((n) => [n, n === AUDIT_LOG_COMPONENT ? audit : logPath(dir, n)]));
  for (const [name, path] of Object.entries(paths)) {
    const text = tailLog(path, o.lines);
    if (text) o.write(name, text);
  }
  if (o.follow) await followLogs(paths, o.write, o.signal);
}
