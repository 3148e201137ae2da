/**
 * Re-recording the fixtures the parser tests replay (test/fixtures/docker/engine/)
 * from this engine: only with HOSPITAL_API_RECORD_FIXTURES=1. Container
 * environments are dropped (they could hold settings), nothing else is changed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../fixtures/docker/engine/', import.meta.url));

export function recordFixture(name: string, inspect: unknown[]): void {
  if (process.env.HOSPITAL_API_RECORD_FIXTURES !== '1') return;
  const clean = inspect.map((c) => {
    const copy = structuredClone(c) as { Config?: { Env?: unknown }; HostsPath?: unknown; ResolvConfPath?: unknown; HostnamePath?: unknown; LogPath?: unknown; GraphDriver?: unknown; Mounts?: unknown };
    if (copy.Config) copy.Config.Env = ['(dropped when recorded)'];
    delete copy.GraphDriver;
    return copy;
  });
  mkdirSync(DIR, { recursive: true });
  writeFileSync(`${DIR}${name}`, JSON.stringify(clean, null, 2) + '\n');
}
