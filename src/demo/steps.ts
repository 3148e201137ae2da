/**
 * DEMO ONLY: the steps of `hospital-api demo`, each calling the code behind the
 * real commands (install, fhir generate/load, consumer create, verify) in
 * process, as the hospital's own runs of those commands would.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { HospitalApiError } from '../errors/index.js';
import { createIo } from '../output/io.js';
import { endpoints, type InstallConfig } from '../install-dir/install-config.js';
import type { Runtime } from '../runtime/types.js';
import { installPaths } from '../install-dir/layout.js';
import { demoSettingsPath, readDemoSettings, type DemoSettings } from '../install-dir/demo-settings.js';
import { DEMO_RUNTIME, DEMO_RUNTIMES, profileOf, siteFhirClient, type RuntimeName } from '../runtime/profiles.js';
import { readEnvFile } from '../util/env-file.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { freePort } from '../util/port-check.js';
import type { DockerFlags, PortFlags } from '../install/port-flags.js';
import { runInstall } from '../install/run.js';
import { runGenerate } from '../fhir-data/generate/command.js';
import { PLATFORM_CARE_ID_SYSTEM } from '../fhir-data/generate/model.js';
import { load } from '../fhir-data/load/command.js';
import { createConsumer } from '../install/consumer.js';
import { formatCheckProgress, runVerify } from '../checks/index.js';

export interface DemoPorts extends PortFlags {
  platformPort?: string;
}

/** The runtime a demo installs on (native unless `--runtime docker`) and, for docker, its images and bind addresses. */
export interface DemoRuntimeChoice extends DockerFlags {
  runtime?: string;
}

export interface ManifestPatient {
  careId: string;
  id: string;
  size: number;
}

export function demoPaths(dir: string) {
  const demo = join(installPaths(dir).root, 'demo');
  return {
    demo,
    data: join(demo, 'data'),
    installed: join(demo, 'installed.json'),
    loaded: join(demo, 'data-loaded.json'),
    manifest: join(demo, 'data', 'manifest.json'),
  };
}

function fail(step: string, dir: string, detail: string): HospitalApiError {
  return new HospitalApiError('ERR_RUNTIME_DEMO_STEP', { step, dir, detail });
}

/** The stand-in's port, chosen once (PLATFORM_API_URL in hospital-api.env points at it). */
export async function ensureDemoSettings(dir: string, ports: DemoPorts): Promise<DemoSettings> {
  const existing = readDemoSettings(dir);
  if (existing) return existing;
  const settings: DemoSettings = { platformPort: ports.platformPort ? Number(ports.platformPort) : await freePort() };
  writeFileAtomic(demoSettingsPath(dir), JSON.stringify(settings, null, 2) + '\n');
  return settings;
}

/** The runtime a demo run asks for: `--runtime`, else native (never docker by mere presence of an engine). */
export function demoRuntime(choice: DemoRuntimeChoice): RuntimeName {
  if (choice.runtime === undefined) return DEMO_RUNTIME;
  const runtime = DEMO_RUNTIMES.find((name) => name === choice.runtime);
  if (runtime === undefined) throw new HospitalApiError('ERR_USAGE', { detail: `--runtime must be ${DEMO_RUNTIMES.join(' or ')}, got "${choice.runtime}"` });
  return runtime;
}

/** The install engineer's own code, in process, with the demo label install.json carries. */
export async function install(dir: string, settings: DemoSettings, ports: DemoPorts, runtime: RuntimeName, choice: DemoRuntimeChoice, log: (text: string) => void): Promise<void> {
  const { platformPort: _unused, ...installPorts } = ports;
  await runInstall(
    {
      ...installPorts,
      ...choice,
      runtime,
      generateCa: true,
      demo: true,
      dir: installPaths(dir).root,
      platformUrl: profileOf(runtime).demoPlatformUrl(settings.platformPort),
      // The generated patients carry their care id in this system (src/fhir-data/generate/model.ts).
      identifierSystem: PLATFORM_CARE_ID_SYSTEM,
    },
    { log },
  );
  writeFileAtomic(demoPaths(dir).installed, JSON.stringify({ installedAt: new Date().toISOString() }) + '\n');
}

/**
 * Generates the data set once per install (before the stack starts: the platform stand-in's tokens
 * are made from it, and a docker stand-in reads its copy of them when it starts).
 */
export async function generateDataOnce(dir: string, patients: number, sizes: string): Promise<ManifestPatient[]> {
  const p = demoPaths(dir);
  if (!existsSync(p.manifest)) {
    mkdirSync(p.data, { recursive: true });
    // The generator's own hints ("Load with: …") would only confuse a demo run.
    const quiet = createIo({ quiet: true, stdout: new Writable({ write: (_c, _e, done) => done() }) });
    await runGenerate({ patients, seed: 'hospital-api-demo', sizes, out: p.data }, quiet);
  }
  return (JSON.parse(readFileSync(p.manifest, 'utf8')) as { patients: ManifestPatient[] }).patients;
}

/** Loads the generated data set into the installation's FHIR server, where this host reaches it, once per install. */
export async function loadDataOnce(dir: string, config: InstallConfig, patients: number): Promise<void> {
  const p = demoPaths(dir);
  if (!existsSync(p.loaded)) {
    // the installation's FHIR address and what it asks of a client on this host (docker: the door's token)
    const site = siteFhirClient(dir, config);
    const summary = await load(
      { files: [join(p.data, '00-shared.json'), join(p.data, '01-patients.ndjson')], url: site.base, headers: site.headers },
      createIo({ stdout: process.stderr }),
    );
    if (summary.failed > 0) throw fail('load data', dir, `${summary.failed} bundles failed to load`);
    writeFileAtomic(p.loaded, JSON.stringify({ loadedAt: new Date().toISOString(), patients }) + '\n');
  }
}

/** Creates the demo consumer and its key unless hospital-api.env already has one. */
export async function ensureConsumer(dir: string, runtime: Runtime, log: (text: string) => void): Promise<boolean> {
  if (readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY) return false;
  // The install engineer's own code; the key goes to hospital-api.env (0600) and is never printed here.
  await createConsumer(runtime, installPaths(dir).root, { username: 'demo', writeEnv: true }, log);
  return true;
}

/** Every §4.5 check, with a signed record, through the install engineer's verify. */
export async function verify(dir: string, runtime: Runtime, log: (text: string) => void): Promise<string> {
  const result = await runVerify({
    dir: installPaths(dir).root,
    runtime,
    onResult: (r) => log(formatCheckProgress(r)),
    log,
  });
  if (!result.ok) {
    const failed = result.record.checks.filter((c) => c.status === 'fail' || c.status === 'error').map((c) => c.title);
    throw fail('verify', dir, `failed: ${failed.join('; ')} (record ${result.files.json})`);
  }
  return result.files.json;
}

/** POSTs for one patient as the platform would; returns how many entries came back. */
export async function fetchRecord(dir: string, config: InstallConfig, careId: string, token: string): Promise<number> {
  const url = `http://127.0.0.1:${config.ports.api}/api/patients`;
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformCareId: careId, token }),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  const body = (await res.body.json()) as { resources?: unknown[] };
  if (res.statusCode !== 200 || !Array.isArray(body.resources)) {
    throw fail('check a record', dir, `POST ${url} answered ${res.statusCode} without resources`);
  }
  return body.resources.length;
}

export function publicApiBase(config: InstallConfig): string {
  return endpoints(config).apiBase;
}
