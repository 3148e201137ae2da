/**
 * Spec §4.5.4: certificate verification is never disabled. No flag, variable
 * or code path in the install/verify/record code (or its docker runtime)
 * turns it off; this reads the sources to prove it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OURS = ['src/checks', 'src/install', 'src/runtime/docker', 'src/commands/verify.ts', 'src/commands/install.ts', 'src/commands/record.ts', 'src/commands/consumer.ts', 'templates'];
/** Every TLS client of install/verify/record/runtime/demo: each must say rejectUnauthorized: true itself. */
const TLS_CLIENTS = ['src/install', 'src/checks', 'src/runtime', 'src/demo'];
/** The one place allowed to name the variable: the supervisor, to delete it from its children's env. */
const SUPERVISOR = 'src/runtime/native/supervisor.ts';

function files(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return [full];
  return readdirSync(full).flatMap((f) => files(join(path, f)));
}

const INSECURE = [
  /rejectUnauthorized\s*:\s*false/,
  /NODE_TLS_REJECT_UNAUTHORIZED/,
  /checkServerIdentity\s*:\s*\(\)\s*=>\s*undefined/,
  /['"](-k|--insecure)['"]/,
  /verify\s*=\s*False/,
  /insecure|no-verify|skip-verify|tls-verify/i,
];

describe('TLS verification cannot be turned off', () => {
  it('no source line of install/verify/record/docker disables certificate checks', () => {
    const hits: string[] = [];
    for (const file of OURS.flatMap(files)) {
      readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        if (INSECURE.some((re) => re.test(line))) hits.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('every undici Agent / tls.connect / https request states rejectUnauthorized: true (the default follows NODE_TLS_REJECT_UNAUTHORIZED)', () => {
    const missing: string[] = [];
    let clients = 0;
    for (const file of TLS_CLIENTS.flatMap(files).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(file, 'utf8');
      const tlsConnect = /from 'node:tls'/.test(text) ? /\bconnect\(\{[^}]*\}/g : null;
      const patterns = [/new (?:Agent|Pool|Client|ProxyAgent)\(\{[^)]*\)/g, /https\.(?:request|get)\([^)]*\)/g, ...(tlsConnect ? [tlsConnect] : [])];
      for (const re of patterns) {
        for (const m of text.matchAll(re)) {
          clients += 1;
          if (!/rejectUnauthorized:\s*true/.test(m[0])) missing.push(`${file}: ${m[0].slice(0, 80)}`);
        }
      }
    }
    expect(clients).toBeGreaterThanOrEqual(2); // verify's Agent and the chain check's handshake
    expect(missing).toEqual([]);
  });

  it('the native supervisor removes NODE_TLS_REJECT_UNAUTHORIZED from its components\' environment, and only it names it', () => {
    const supervisor = readFileSync(join(ROOT, SUPERVISOR), 'utf8');
    expect(supervisor).toMatch(/TLS_OFF_SWITCH = 'NODE_TLS_REJECT_UNAUTHORIZED'/);
    expect(supervisor).toMatch(/delete env\[TLS_OFF_SWITCH\]/);
    const others = files('src/runtime').filter((f) => !f.endsWith('supervisor.ts') && /NODE_TLS_REJECT_UNAUTHORIZED\s*[:=]/.test(readFileSync(f, 'utf8')));
    expect(others).toEqual([]);
  });

  it('the pattern list does catch an insecure line (the scan is real)', () => {
    expect(INSECURE.some((re) => re.test('const agent = new Agent({ connect: { rejectUnauthorized: false } })'))).toBe(true);
    expect(INSECURE.some((re) => re.test("args.push('-k')"))).toBe(true);
  });

  it('verify offers no option to skip verification', async () => {
    const help = await runCli(['verify', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).not.toMatch(/insecure|no-verify|skip/i);
    expect((await runCli(['verify', '--insecure'])).exitCode).toBe(2);
  });
});
