/**
 * The real FHIR server as the CLI child (`hospital-api fhir`) with a temporary --data: started
 * on an ephemeral port (--port 0) and ready at its one "listening on <base>" line, which gives the
 * port; stopped with SIGTERM (SIGKILL after 5 s). The one helper every suite that needs the
 * native FHIR server as a process uses.
 */
import type { ResultPromise } from 'execa';
import { request } from 'undici';
import { startCli } from './cli.js';

export interface RunningFhir {
  /** http://127.0.0.1:<port>/fhir */
  base: string;
  /** The child process, for a test that signals it itself (SIGTERM's exit code, kill -9). */
  child: ResultPromise;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

const READY = /listening on (http:\/\/127\.0\.0\.1:\d+\/fhir)/;

export async function startFhir(dataDir: string, extra: string[] = []): Promise<RunningFhir> {
  const child = startCli(['fhir', '--host', '127.0.0.1', '--port', '0', '--data', dataDir, ...extra]);
  let stderr = '';
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`fhir server did not start: ${stderr}`));
    }, 30_000);
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = READY.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] as string);
      }
    });
    const early = (): void => {
      clearTimeout(timer);
      reject(new Error(`fhir server exited: ${stderr}`));
    };
    void child.then(early, early);
  });
  return {
    base,
    child,
    stderr: () => stderr,
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
