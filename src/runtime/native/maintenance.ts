/**
 * The native runtime's day-two operations (issue 15): reload the Hospital
 * API's key and the gateway's certificate by signal (no restart, no dropped
 * connection), and copy or put back the live data.
 */
import { copyFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { backupFhirStore, FHIR_STORE_FILE } from '../../fhir/store/online-backup.js';
import { awaitReloadStatus } from '../api-reload-status.js';
import { installPaths } from '../../install-dir/layout.js';
import { TLS_RELOADED_IN_PLACE, type ApiKeyReload, type DataPart, type GatewayTlsReload } from '../types.js';
import { isOurs, runningSupervisor } from './state.js';


/** The file the API writes after a SIGHUP (components.ts passes it as --reload-status). */
export function apiReloadStatusPath(dir: string): string {
  return join(installPaths(dir).run, 'api-reload.json');
}

/** The pid of a running component this install started, or a coded error. */
function componentPid(dir: string, name: string): number {
  const state = runningSupervisor(dir);
  if (!state) throw new HospitalApiError('ERR_RUNTIME_NOT_RUNNING', { dir: installPaths(dir).root });
  const c = state.components.find((x) => x.name === name);
  if (!c || c.state !== 'up' || !isOurs(c.pid, c.pidStart)) {
    throw new HospitalApiError('ERR_RUNTIME_START_FAILED', { component: name, dir: installPaths(dir).root, detail: `it is ${c?.state ?? 'not known'}, not up` });
  }
  return c.pid as number;
}

export async function reloadApiKey(dir: string): Promise<ApiKeyReload> {
  return reloadApiKeyOf(dir, componentPid(dir, 'api'));
}

/** SIGHUP to the API process `pid` (whoever supervises it), then its answer in run/api-reload.json. */
export async function reloadApiKeyOf(dir: string, pid: number): Promise<ApiKeyReload> {
  const path = apiReloadStatusPath(dir);
  rmSync(path, { force: true });
  process.kill(pid, 'SIGHUP');
  return awaitReloadStatus(path, (s) => s.pid === pid, `the API (pid ${pid})`);
}

export async function reloadGatewayTls(dir: string): Promise<GatewayTlsReload> {
  process.kill(componentPid(dir, 'gateway'), 'SIGHUP');
  return TLS_RELOADED_IN_PLACE;
}

export async function snapshotNativeData(dir: string, into: string, progress: (text: string) => void): Promise<DataPart[]> {
  const p = installPaths(dir);
  const parts: DataPart[] = [];
  mkdirSync(join(into, 'fhir'), { recursive: true });
  if (existsSync(join(p.fhirData, FHIR_STORE_FILE))) {
    let last = -10;
    const facts = await backupFhirStore(p.fhirData, join(into, 'fhir', FHIR_STORE_FILE), (done, total) => {
      const pct = total ? Math.floor((done * 100) / total) : 100;
      if (pct >= last + 10) { last = pct; progress(`FHIR store: ${pct}% of ${total} pages copied`); }
    });
    progress(`FHIR store: consistent copy of ${facts.resources} resources (schema ${facts.schemaVersion})`);
    parts.push({ path: `fhir/${FHIR_STORE_FILE}`, kind: 'fhir-store' });
  }
  if (existsSync(p.gatewayState)) {
    // The admin API replaces the file by rename (gateway/store/state-file.ts), so one read is one version.
    mkdirSync(join(into, 'gateway'), { recursive: true });
    copyFileSync(p.gatewayState, join(into, 'gateway', 'state.json'));
    parts.push({ path: 'gateway/state.json', kind: 'gateway-state' });
  }
  return parts;
}

export async function restoreNativeData(dir: string, from: string, parts: DataPart[]): Promise<void> {
  const p = installPaths(dir);
  for (const part of parts) {
    const target = part.kind === 'fhir-store' ? join(p.fhirData, FHIR_STORE_FILE) : p.gatewayState;
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(join(from, part.path), target);
  }
}
