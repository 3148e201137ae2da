/**
 * Starts the Hospital API in-process (port 0) between a platform stand-in and
 * a HAPI-like FHIR stand-in over HTTPS with a CA made for the test.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach } from 'vitest';
import type { AuditFs } from '../../src/api/audit/audit.js';
import { loadConfig } from '../../src/api/server/config.js';
import { startApi, type RunningApi } from '../../src/api/server/server.js';
import { makeTestPki, type TestPki } from '../helpers/pki.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { startFhirStandIn, startPlatform, type FhirOptions, type PlatformReply, type Seen, type StandIn } from './stand-ins.js';

export const API_KEY = 'test-fhir-key-7f3a9c1e5b';
export const TOKEN_OK = 'Bearer good-token-4d2e8a';

export interface HarnessOptions {
  env?: Record<string, string>;
  fhir?: Partial<FhirOptions>;
  platform?: (authorization: string | undefined, seen: Seen) => PlatformReply;
  platformTls?: boolean;
  /** The audit log's file operations (a disk that fails on cue). */
  auditFs?: AuditFs;
}

export interface Harness {
  dir: string;
  pki: TestPki;
  platform: StandIn;
  fhir: StandIn & { options: FhirOptions };
  running: RunningApi;
  url: string;
  auditPath: string;
  /** The audit log's `end` lines (one per request). */
  audit(): Array<Record<string, unknown>>;
  /** Every audit line (`started`, `end`, `probe`). */
  auditLines(): Array<Record<string, unknown>>;
  /** Puts a directory where the audit log was: every open of it fails from now on (EISDIR), even as root. */
  blockAudit(): void;
  post(body: unknown, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; text: string; json: any }>;
  close(): Promise<void>;
}

let sharedPki: { dir: string; pki: TestPki } | null = null;

/** One PKI per test file: generating RSA keys is the slow part. */
export function testPki(): { dir: string; pki: TestPki } {
  if (!sharedPki) {
    const dir = tempDir('hapi-api-pki-');
    sharedPki = { dir, pki: makeTestPki(dir) };
  }
  return sharedPki;
}

export function defaultPlatform(authorization: string | undefined): PlatformReply {
  return authorization === TOKEN_OK ? { status: 200, body: { ok: true } } : { status: 401 };
}

function auditLines(path: string): Array<Record<string, unknown>> {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const { pki } = testPki();
  const dir = tempDir('hapi-api-');
  const platform = await startPlatform(options.platform ?? defaultPlatform, options.platformTls ? pki.server : undefined);
  const fhir = await startFhirStandIn({
    tls: pki.server,
    apiKey: API_KEY,
    patients: { 'care-1': ['p1'] },
    records: { p1: [] },
    ...options.fhir,
  });
  const auditPath = join(dir, 'audit.log');
  const env = {
    PLATFORM_API_URL: platform.url,
    FHIR_BASE_URL: fhir.url,
    FHIR_API_KEY: API_KEY,
    FHIR_CA_FILE: pki.files.ca,
    AUDIT_LOG: auditPath,
    METRICS_LISTEN: '127.0.0.1:0',
    // The stand-in's patients are keyed by the bare care id; tests of the system match set PLATFORM_IDENTIFIER_SYSTEM.
    PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true',
    ...(options.platformTls ? { PLATFORM_CA_FILE: pki.files.ca } : {}),
    ...options.env,
  };
  const config = loadConfig({ host: '127.0.0.1', port: 0 }, env, dir);
  const running = await startApi(config, options.auditFs ? { auditFs: options.auditFs } : {});
  const url = running.url;
  return {
    dir,
    pki,
    platform,
    fhir,
    running,
    url,
    auditPath,
    audit: () => auditLines(auditPath).filter((l) => l.phase === 'end'),
    auditLines: () => auditLines(auditPath),
    blockAudit() {
      // The server may create the file again between the removal and the mkdir: with a record in flight it opens the
      // file for the next line ahead of it, with O_CREAT (src/api/audit/audit.ts prepare). Removed again, it is then refused
      // at its line, since the handle opened ahead no longer names the file at the path.
      for (let tries = 0; ; tries++) {
        rmSync(auditPath, { force: true });
        try {
          mkdirSync(auditPath);
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 20) throw err;
        }
      }
    },
    async post(body, headers = {}) {
      const res = await request(`${url}/api/patients`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
    async close() {
      await running.stop();
      await Promise.all([platform.close(), fhir.close()]);
    },
  };
}

/**
 * For a test file: returns `harness(options)`, which starts a harness for the running test; it is
 * closed after that test, and the file's temporary directories are removed after the file.
 */
export function useHarness(): (options?: HarnessOptions) => Promise<Harness> {
  let current: Harness | null = null;
  afterEach(async () => {
    await current?.close();
    current = null;
  });
  afterAll(() => removeTempDirs());
  return async (options = {}) => {
    current = await startHarness(options);
    return current;
  };
}

/** Waits until the audit log has `n` end lines. */
export async function waitForAudit(h: Harness, n: number): Promise<Array<Record<string, unknown>>> {
  for (let i = 0; i < 100; i++) {
    const lines = h.audit();
    if (lines.length >= n) return lines;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return h.audit();
}
