/** The DEMO platform stand-in: real HTTP on an ephemeral port, tokens bound to care ids. */
import { statSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPlatformStandIn } from '../../src/demo/platform-stand-in.js';
import { tokensPath, writeTokens } from '../../src/demo/tokens.js';
import { patientsCurl } from '../../src/demo/curl.js';
import { shellQuote } from '../../src/util/shell-word.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

describe('DEMO platform stand-in', () => {
  it('grants a demo token for its own care id only', async () => {
    const dir = tempDir();
    const [a, b] = writeTokens(dir, ['CARE-A', 'CARE-B']);
    expect(statSync(tokensPath(dir)).mode & 0o777).toBe(0o600);
    const app = buildPlatformStandIn(dir);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    try {
      const get = async (token?: string) => {
        const res = await request(`${base}/validate-access`, { headers: token ? { authorization: token } : {} });
        return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
      };
      expect(await get(a!.token)).toEqual({ status: 200, body: { platformCareId: 'CARE-A', demo: true } });
      expect((await get(`Bearer ${b!.token}`)).body.platformCareId).toBe('CARE-B');
      expect((await get()).status).toBe(401);
      expect((await get(`${a!.token}x`)).status).toBe(401);

      const post = await request(`${base}/validate-access`, {
        method: 'POST',
        headers: { authorization: a!.token, 'content-type': 'application/json' },
        body: JSON.stringify({ platformCareId: 'CARE-B' }),
      });
      expect(post.statusCode).toBe(403);
      await post.body.dump();
    } finally {
      await app.close();
    }
  });

  it('prints a single-line curl that a POSIX shell reads back intact', () => {
    const line = patientsCurl('http://localhost:9000', "O'Brien-1", 'demo-abc');
    expect(line).not.toContain('\n');
    expect(line).toContain(`-d '{"platformCareId":"O'\\''Brien-1","token":"demo-abc"}'`);
    expect(shellQuote("a'b")).toBe(`'a'\\''b'`);
  });
});
