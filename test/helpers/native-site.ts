/**
 * A real native site for the day-two tests (issue 15): the real CLI installs
 * it on ephemeral ports in a temp dir, creates the consumer, starts the stack
 * and loads generated patients; a platform stand-in answers /validate-access.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { cliAt, runCli, type CliOutcome } from './cli.js';
import { postPatient, type PatientAnswer, tokenOf } from './patients.js';
import { installNative, testPorts } from './native-install.js';
import { tempDir } from './tmp.js';
import { buildPlatformStandIn } from '../../src/demo/platform-stand-in.js';
import { writeTokens, type DemoToken } from '../../src/demo/tokens.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import type { GeneratedPatient } from '../../src/fhir-data/generate/model.js';

export interface NativeSite {
  dir: string;
  ports: Record<'api' | 'fhir' | 'gatewayHttp' | 'gatewayHttps' | 'gatewayAdmin' | 'metrics', number>;
  patients: GeneratedPatient[];
  tokens: DemoToken[];
  cli(args: string[], env?: Record<string, string>): Promise<CliOutcome>;
  post(careId: string, token: string): Promise<PatientAnswer>;
  close(): Promise<void>;
}

export type { PatientsBody } from './patients.js';

export async function startNativeSite(options: { seed: string; patients: number; sizes: string; dir?: string }): Promise<NativeSite> {
  const dir = options.dir ?? tempDir('hapi-day2-');
  const platformDir = tempDir('hapi-day2-platform-');
  const platform = buildPlatformStandIn(platformDir);
  await platform.listen({ host: '127.0.0.1', port: 0 });
  const addr = platform.server.address();
  const platformUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  const ports = await testPorts();
  const inDir = cliAt(dir);
  const cli = (args: string[], env: Record<string, string> = {}) => inDir(args, { env });
  const dataset = generateDataset({ patients: options.patients, seed: options.seed, sizes: options.sizes });
  const tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));
  const site: NativeSite = {
    dir,
    ports,
    patients: dataset.patients,
    tokens,
    cli,
    post: (careId, token) => postPatient(ports.api, careId, token),
    async close() {
      await runCli(['down', '--dir', dir]);
      await platform.close();
    },
  };
  await installNative({ dir, ports, platformUrl, consumer: 'day2-hospital' });
  const up = await cli(['up']);
  expect(up.code, up.err).toBe(0);
  const data = join(dir, 'generated');
  const gen = await runCli(['fhir', 'generate', '--patients', String(options.patients), '--seed', options.seed, '--sizes', options.sizes, '--out', data]);
  expect(gen.exitCode, String(gen.stderr)).toBe(0);
  const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--url', `http://127.0.0.1:${ports.fhir}/fhir`]);
  expect(load.exitCode, String(load.stderr)).toBe(0);
  return site;
}

/** POSTs in `parallel` loops until stop() resolves; every status and error is kept. */
export function loadLoop(site: NativeSite, parallel: number): { stop(): Promise<Array<{ status: number; at: number; error?: string }>> } {
  const results: Array<{ status: number; at: number; error?: string }> = [];
  let running = true;
  const loops = Array.from({ length: parallel }, async (_, i) => {
    const patient = site.patients[i % site.patients.length]!;
    const token = tokenOf(site.tokens, patient.careId);
    while (running) {
      const at = Date.now();
      try {
        const r = await site.post(patient.careId, token);
        const n = r.body.resources?.length ?? 0;
        results.push({ status: r.status, at, ...(r.status === 200 && n >= patient.size ? {} : { error: r.body.error?.code ?? `only ${n} resources` }) });
      } catch (err) {
        results.push({ status: 0, at, error: (err as Error).message });
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return results;
    },
  };
}
