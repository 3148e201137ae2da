/**
 * `hospital-api logs` on the docker runtime (issue 27: it only printed a
 * `docker compose --project-directory` line that Debian's Compose refuses).
 * Compose here is a real program standing in for it, printing what Compose v1
 * prints (`name_1  | line`) for the argv the runtime gives; the audit log is a
 * real file. test/docker-engine/day-two.test.ts runs the same against Debian's
 * docker-compose 1.29 on the real engine.
 */
import { appendFileSync, chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dockerCli } from '../../../src/runtime/container/compose.js';
import { dockerLogs, withoutComposePrefix } from '../../../src/runtime/docker/logs.js';
import { isHospitalApiError } from '../../../src/errors/index.js';
import type { LogsOptions } from '../../../src/runtime/types.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';

afterAll(() => removeTempDirs());

function site() {
  const dir = tempDir('docker-logs-');
  const bin = join(dir, 'fake-compose');
  // argv: -p P -f F logs --no-color (--follow)? --tail N SERVICE
  writeFileSync(
    bin,
    [
      '#!/bin/sh',
      'echo "$*" >> "$(dirname "$0")/argv"',
      'for last; do :; done',
      'case "$*" in',
      '  *" logs --no-color --follow "*) echo "${last}_1  | followed line"; exec sleep 60 ;;',
      '  *" logs --no-color --tail "*) printf "%s_1  | first\\n%s_1  | a | b\\n" "$last" "$last" ;;',
      'esac',
      '',
    ].join('\n'),
  );
  chmodSync(bin, 0o755);
  const audit = join(dir, 'audit.log');
  writeFileSync(audit, '{"event":"started"}\n{"event":"ended"}\n');
  const cli = dockerCli('proj', '/x/compose.yaml', { docker: bin, compose: [bin] });
  return { dir, audit, cli: async () => cli };
}

function collect(extra: Partial<LogsOptions> = {}) {
  const got: Array<[string, string]> = [];
  const abort = new AbortController();
  const options: LogsOptions = { lines: 5, follow: false, signal: abort.signal, write: (name, text) => void got.push([name, text]), ...extra };
  return { got, abort, options };
}

describe('docker logs', () => {
  it("cuts Compose's container prefix and keeps the rest of the line, bars included", () => {
    expect(withoutComposePrefix('kong_1  | hello | world\nkong-1  | x\nno prefix')).toBe('hello | world\nx\nno prefix');
  });

  it("prints one service's log through Compose (--no-color --tail N, flags v1 and v2 share), and the audit log", async () => {
    const s = site();
    const { got, options } = collect();
    await dockerLogs(s.cli, s.audit, { ...options, component: 'kong' });
    expect(got).toEqual([['kong', 'first\na | b\n']]);
    const audit = collect();
    await dockerLogs(s.cli, s.audit, { ...audit.options, component: 'audit', lines: 1 });
    expect(audit.got).toEqual([['audit', '{"event":"ended"}\n']]);
  });

  it('prints every service and the audit log when none is named, each under its own name', async () => {
    const s = site();
    const { got, options } = collect();
    await dockerLogs(s.cli, s.audit, options);
    expect(got.map(([n]) => n)).toEqual(['fhir-door', 'hapi', 'hapi-database', 'hapi-pidns', 'hapi-watchdog', 'hospital-api', 'kong', 'kong-database', 'audit']);
  });

  it('an unknown component is refused, naming the ones that exist', async () => {
    const s = site();
    const { options } = collect();
    const unknown = await dockerLogs(s.cli, s.audit, { ...options, component: 'nginx' }).catch((e: unknown) => e);
    expect(isHospitalApiError(unknown) && unknown.code).toBe('ERR_RUNTIME_UNKNOWN_COMPONENT');
    expect((unknown as { hint?: string }).hint).toMatch(/kong.*audit/);
  });

  it('scheduled acceptance (issue 46): its services are components of `logs` only where install added them', async () => {
    const s = site();
    const without = await dockerLogs(s.cli, s.audit, { ...collect().options, component: 'acceptance' }).catch((e: unknown) => e);
    expect(isHospitalApiError(without) && without.code).toBe('ERR_RUNTIME_UNKNOWN_COMPONENT');
    const { got, options } = collect();
    await dockerLogs(s.cli, s.audit, { ...options, component: 'acceptance' }, ['acceptance', 'acceptance-relay']);
    expect(got.map(([n]) => n)).toEqual(['acceptance']);
  });

  it('--follow streams what Compose prints and what the audit log gains until stopped', async () => {
    const s = site();
    const { got, abort, options } = collect({ follow: true });
    const following = dockerLogs(s.cli, s.audit, { ...options, component: 'kong' });
    await until(() => got.some(([n, t]) => n === 'kong' && t === 'followed line\n'), { what: "kong's followed line" });
    abort.abort();
    await following;
    const both = collect({ follow: true });
    const auditFollow = dockerLogs(s.cli, s.audit, { ...both.options, component: 'audit' });
    await until(() => both.got.length > 0, { what: 'the audit log history' });
    appendFileSync(s.audit, '{"event":"later"}\n');
    await until(() => both.got.some(([, t]) => t.includes('later')), { what: 'the appended audit line' });
    both.abort.abort();
    await auditFollow;
  });
});
