/**
 * Restart requests to the supervisor: `restart-<component>.<token>.request`
 * files in run/ (one file per request, so concurrent requesters never share or
 * lose one), then SIGUSR2. This is the supervisor's side: taking the files.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Restart requests are `restart-<component>.<token>.request` in run/. */
export const RESTART_REQUEST = /^restart-([a-z]+)\.([A-Za-z0-9-]{1,80})\.request$/;

/**
 * Takes (reads and removes) every request file present, grouped by component:
 * component → tokens. A file can vanish between the listing and the read
 * (another scan took it): skipped, never fatal.
 */
export function takeRestartRequests(runDir: string): Map<string, string[]> {
  const byComponent = new Map<string, string[]>();
  let files: string[];
  try {
    files = readdirSync(runDir);
  } catch {
    return byComponent;
  }
  for (const file of files) {
    const m = RESTART_REQUEST.exec(file);
    if (!m) continue;
    const path = join(runDir, file);
    try {
      readFileSync(path);
      rmSync(path);
    } catch {
      continue; // already taken
    }
    const name = m[1] as string;
    byComponent.set(name, [...(byComponent.get(name) ?? []), m[2] as string]);
  }
  return byComponent;
}
