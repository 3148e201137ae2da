/**
 * Issue 45: the gateway's status listener with `--status-token-file` answers the
 * holder of the token only, as the Hospital API's /metrics does (another local
 * account reads no metrics), compared in constant time; a file other accounts
 * may read, or an empty one, stops the start. The real gateway child.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

const TOKEN = 'status-token-0123456789abcdef';
const running: GatewayProcess[] = [];
afterAll(async () => {
  for (const g of running) g.child.kill('SIGTERM');
  await Promise.allSettled(running.map((g) => g.child));
  removeTempDirs();
});

function tokenFile(content: string, mode: number): string {
  const file = join(tempDir('status-token-'), 'token');
  writeFileSync(file, content, { mode });
  return file;
}

async function scrape(g: GatewayProcess, authorization?: string): Promise<{ status: number; body: string; challenge: string | undefined }> {
  const res = await request(`${g.status}/metrics`, authorization ? { headers: { authorization } } : {});
  return { status: res.statusCode, body: await res.body.text(), challenge: res.headers['www-authenticate'] as string | undefined };
}

describe('gateway --status-token-file', () => {
  it('401 without the token or with another, 200 and the prometheus families with it', async () => {
    const state = join(tempDir('status-token-state-'), 'state.json');
    const g = await startGatewayProcess(state, ['--status-listen', '127.0.0.1:0', '--status-token-file', tokenFile(`${TOKEN}\n`, 0o600)]);
    running.push(g);
    const none = await scrape(g);
    expect([none.status, none.challenge, none.body]).toEqual([401, 'Bearer', '{"message":"Unauthorized"}']);
    expect((await scrape(g, `Bearer ${TOKEN}x`)).status).toBe(401);
    expect((await scrape(g, `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`)).status).toBe(401);
    const ok = await scrape(g, `Bearer ${TOKEN}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatch(/^kong_nginx_connections_total/m);
  });

  it('without the flag the listener answers anyone, as Kong\'s', async () => {
    const state = join(tempDir('status-token-state-'), 'state.json');
    const g = await startGatewayProcess(state, ['--status-listen', '127.0.0.1:0']);
    running.push(g);
    expect((await scrape(g)).status).toBe(200);
  });

  it('a token file other accounts may read, or an empty one, stops the start (exit 2)', async () => {
    for (const [content, mode, says] of [[`${TOKEN}\n`, 0o604, 'may be read by any account'], ['\n', 0o600, '16 to 4096']] as const) {
      const r = await runCli(['gateway', '--admin-listen', '127.0.0.1:0', '--status-listen', '127.0.0.1:0', '--state', join(tempDir('status-token-bad-'), 's.json'), '--status-token-file', tokenFile(content, mode)]);
      expect(r.exitCode).toBe(2);
      expect(String(r.stderr)).toContain(says);
      expect(String(r.stderr)).not.toContain(TOKEN);
    }
  });
});
