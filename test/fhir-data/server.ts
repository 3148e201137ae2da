/**
 * Starts the real FHIR server as the CLI child (`hospital-api fhir`) on a free
 * port with a temporary --data, waits for /fhir/metadata, and stops it.
 */
import { request } from 'undici';
import { freePort } from '../../src/util/port-check.js';
import { startCli } from '../helpers/cli.js';

export interface RunningFhir {
  base: string;
  stop(): Promise<void>;
}

export async function startFhir(dataDir: string, extra: string[] = []): Promise<RunningFhir> {
  const port = await freePort();
  const child = startCli(['fhir', '--host', '127.0.0.1', '--port', String(port), '--data', dataDir, ...extra]);
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => void (stderr += c.toString()));
  const base = `http://127.0.0.1:${port}/fhir`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`fhir server exited: ${stderr}`);
    try {
      const res = await request(`${base}/metadata`, { headers: { accept: 'application/fhir+json' } });
      await res.body.dump();
      if (res.statusCode === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`fhir server did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await child.catch(() => undefined);
        clearTimeout(timer);
      }
    },
  };
}

export async function fhirJson(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: (init.method ?? 'GET') as 'GET',
    headers: { accept: 'application/fhir+json', ...(init.body !== undefined ? { 'content-type': 'application/fhir+json' } : {}), ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}
