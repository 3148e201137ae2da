/**
 * DEMO ONLY (`hospital-api demo`, run by `npm start`): install (native,
 * generated CA) → up with the platform stand-in → load generated data once →
 * `consumer create demo --write-env` → verify → one real POST /api/patients,
 * then a ready-to-paste curl. A second run reuses the install and is fast.
 * It refuses to touch an installation that is not labelled demo.
 */
import { existsSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { DOCKER_FLAGS, PORT_FLAGS } from '../install/port-flags.js';
import type { Io } from '../output/io.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { openRuntime } from '../runtime/index.js';
import { parseSizes } from '../fhir-data/generate/dataset.js';
import { patientsCurl } from './curl.js';
import { shellWord } from '../util/shell-word.js';
import { readTokens, writeTokens, type DemoToken } from './tokens.js';
import * as step from './steps.js';

export interface DemoOptions extends step.DemoPorts, step.DemoRuntimeChoice {
  dir: string;
  patients?: string;
  sizes?: string;
}

export interface DemoResult {
  dir: string;
  /** The signed acceptance record verify wrote. */
  record: string;
  fresh: boolean;
  seconds: { total: number; toVerified: number; steps: Record<string, number> };
  patient: { careId: string; resources: number };
  curl: string;
  tokens: DemoToken[];
}

function portsOf(o: DemoOptions): step.DemoPorts {
  const keys = [...PORT_FLAGS.map((p) => p.key), 'platformPort'] as const;
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

function runtimeChoiceOf(o: DemoOptions): step.DemoRuntimeChoice {
  const keys = ['runtime', ...DOCKER_FLAGS.map((d) => d.key)] as const;
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
}

export async function runDemo(options: DemoOptions, io: Io): Promise<DemoResult> {
  const dir = installPaths(options.dir).root;
  const t0 = Date.now();
  const steps: Record<string, number> = {};
  const timed = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const s = Date.now();
    io.log(`DEMO ▸ ${name}…`);
    const value = await work();
    steps[name] = (Date.now() - s) / 1000;
    io.log(`DEMO ▸ ${name} done (${steps[name]!.toFixed(1)}s)`);
    return value;
  };
  io.log(`DEMO MODE — a throw-away installation in ${dir}, with synthetic patients and a platform stand-in. Not for production.`);

  // Bad input changes nothing: check the first-run data options before installing anything.
  const patientCount = Number(options.patients ?? 20);
  if (!Number.isInteger(patientCount) || patientCount < 1 || patientCount > 1000) {
    throw new HospitalApiError('ERR_USAGE', { detail: `--patients must be a whole number from 1 to 1000, got "${options.patients}"` });
  }
  parseSizes(options.sizes ?? '10-2000');
  const choice = runtimeChoiceOf(options);
  const runtimeName = step.demoRuntime(choice);
  if (existsSync(installPaths(dir).installJson) && !readInstallConfig(dir).demo) {
    throw new HospitalApiError('ERR_RUNTIME_DEMO_REFUSED', { dir });
  }
  // Installed means install ran to the end (provisioning included); a run cut short is completed by rerunning install.
  const installed = existsSync(step.demoPaths(dir).installed);
  const settings = await step.ensureDemoSettings(dir, options);
  // The data and its tokens first: the platform stand-in starts with the stack and reads them.
  const patients = await timed('generate synthetic patients (once)', () => step.generateDataOnce(dir, patientCount, options.sizes ?? '10-2000'));
  let tokens = readTokens(dir);
  if (tokens.length !== patients.length) tokens = writeTokens(dir, patients.map((p) => p.careId));
  if (!installed) {
    await timed(`install (${runtimeName}, generated CA)`, () => step.install(dir, settings, portsOf(options), runtimeName, choice, (t) => io.log(t)));
  }
  const config = readInstallConfig(dir);
  if (choice.runtime !== undefined && config.runtime !== runtimeName) {
    throw new HospitalApiError('ERR_INSTALL_RUNTIME_CONFLICT', { dir, existing: config.runtime, requested: runtimeName });
  }
  const runtime = await openRuntime(dir);
  await timed('up (the stack + DEMO platform stand-in)', () => runtime.up({ demo: true }));
  // Loading (FHIR server) and the consumer (gateway + API restart) touch different components: run both at once.
  await Promise.all([
    timed('load generated data (once)', () => step.loadDataOnce(dir, config, patientCount)),
    timed('consumer create demo --write-env (once)', () => step.ensureConsumer(dir, runtime, (t) => io.log(t))),
  ]);
  const record = await timed('verify', () => step.verify(dir, runtime, (t) => io.log(t)));
  const toVerified = (Date.now() - t0) / 1000;

  // A small patient keeps the pasted curl's output readable.
  const chosen = [...patients].sort((a, b) => a.size - b.size)[0];
  const token = tokens.find((t) => t.careId === chosen?.careId);
  if (!chosen || !token) throw new HospitalApiError('ERR_RUNTIME_DEMO_STEP', { step: 'pick a patient', dir, detail: 'no generated patient' });
  const resources = await timed('POST /api/patients', () => step.fetchRecord(dir, config, chosen.careId, token.token));
  return {
    dir,
    record,
    fresh: !installed,
    seconds: { total: (Date.now() - t0) / 1000, toVerified, steps },
    patient: { careId: chosen.careId, resources },
    curl: patientsCurl(step.publicApiBase(config), chosen.careId, token.token),
    tokens,
  };
}

export function renderDemo(result: DemoResult, io: Io): void {
  const c = io.colour;
  io.out(c.bold.yellow('=== DEMO installation: synthetic data, demo tokens, not for production ==='));
  io.out(`Verified in ${result.seconds.toVerified.toFixed(1)}s (${result.fresh ? 'fresh install' : 'reused install'}); ` +
    `POST /api/patients returned ${result.patient.resources} resources for care id ${result.patient.careId}.`);
  io.out(`Acceptance record: ${result.record}`);
  io.out(`Demo tokens (each valid for its own care id only) are in ${result.dir}/demo/tokens.json. Try:`);
  io.out('');
  io.out(result.curl);
  io.out('');
  io.out(nextCommands(result.dir));
}

/**
 * How to look at and stop this demo: plain commands (and `npm stop`) reach only the default installation, so a
 * demo in another folder, or run with --runtime docker somewhere else, gets commands that name its --dir.
 */
export function nextCommands(dir: string, env: NodeJS.ProcessEnv = process.env): string {
  const root = installPaths(dir).root;
  if (root === defaultInstallDir(env)) {
    return 'Status: `hospital-api status`   Logs: `hospital-api logs -f`   Stop: `npm stop`';
  }
  const at = `--dir ${shellWord(root)}`;
  return `Status: \`hospital-api status ${at}\`   Logs: \`hospital-api logs -f ${at}\`   Stop: \`hospital-api down ${at}\``;
}
