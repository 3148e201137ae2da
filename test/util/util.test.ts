import { chownSync, readdirSync, readFileSync, statSync, writeFileSync, mkdirSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic, writeSecretFile } from '../../src/util/atomic-write.js';
import { safeEqual, secretDigest } from '../../src/util/constant-time.js';
import { formatEnvFile, readEnvFile } from '../../src/util/env-file.js';
import { isLoopback, parseListen } from '../../src/util/listen-address.js';
import { freePort, freePorts, isPortFree } from '../../src/util/port-check.js';
import { createServer } from 'node:net';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

describe('writeFileAtomic', () => {
  it('writes secrets with mode 0600 and leaves no temp file', () => {
    const dir = tempDir();
    const path = join(dir, 'sub', 'key.pem');
    writeSecretFile(path, 'secret');
    expect(readFileSync(path, 'utf8')).toBe('secret');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'sub'))).toEqual(['key.pem']);
  });

  it('keeps the old content and leaves no temp file when the write fails part-way (file size limit: holds as root too)', async () => {
    // Root ignores file permissions, so fail the write itself: a child whose file size limit
    // (ulimit -f, in KiB) is smaller than the new content gets EFBIG in the middle of writing.
    const dir = tempDir();
    const path = join(dir, 'state.json');
    const old = JSON.stringify({ old: true, pad: 'o'.repeat(1000) });
    writeFileSync(path, old);
    const script = join(dir, 'write.mjs');
    writeFileSync(script, [
      `import { writeFileAtomic } from ${JSON.stringify(fileURLToPath(new URL('../../src/util/atomic-write.ts', import.meta.url)))};`,
      'try { writeFileAtomic(process.argv[2], Buffer.alloc(256 * 1024, 110)); console.log("written"); }',
      'catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }',
    ].join('\n'));
    const child = await execa('bash', ['-c', 'ulimit -f 16 && exec "$0" --import tsx "$1" "$2"', process.execPath, script, path], { reject: false });
    expect(child.exitCode, String(child.stderr)).toBe(0);
    const outcome = JSON.parse(String(child.stdout)) as { code: string; message: string };
    expect(outcome.code).toBe('ERR_FILE_WRITE');
    expect(outcome.message).toMatch(/EFBIG|too large/);
    expect(readFileSync(path, 'utf8')).toBe(old);
    expect(readdirSync(dir).sort()).toEqual(['state.json', 'write.mjs']);
  });

  it('keeps the old content and leaves no temp file when the rename fails (the target is a directory)', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'state.json'));
    writeFileSync(join(dir, 'state.json', 'inside'), 'old');
    expect(() => writeFileAtomic(join(dir, 'state.json'), 'new')).toThrow(/Cannot write .*state\.json/);
    expect(readdirSync(dir)).toEqual(['state.json']);
    expect(readFileSync(join(dir, 'state.json', 'inside'), 'utf8')).toBe('old');
  });

  it.skipIf(process.getuid?.() === 0)('keeps the old content when the directory is read-only (non-root only: root ignores permissions)', () => {
    const dir = tempDir();
    const path = join(dir, 'ro', 'state.json');
    mkdirSync(join(dir, 'ro'));
    writeFileSync(path, 'old');
    chmodSync(join(dir, 'ro'), 0o500);
    try {
      expect(() => writeFileAtomic(path, 'new')).toThrow(/Cannot write/);
      expect(readFileSync(path, 'utf8')).toBe('old');
    } finally {
      chmodSync(join(dir, 'ro'), 0o700);
    }
  });
});

describe('writeFileAtomic run as root', () => {
  it.runIf(process.getuid?.() === 0)('gives a new file its folder\'s owner (a systemd install\'s service user), and leaves root\'s folders to root', () => {
    const dir = tempDir();
    const service = join(dir, 'install');
    mkdirSync(service);
    chownSync(service, 4242, 4343);
    writeSecretFile(join(service, 'hospital-api.env'), 'FHIR_API_KEY=x\n');
    const st = statSync(join(service, 'hospital-api.env'));
    expect([st.uid, st.gid, st.mode & 0o777]).toEqual([4242, 4343, 0o600]);
    // replacing a file keeps that owner too, whoever owned the old one
    chownSync(join(service, 'hospital-api.env'), 0, 0);
    writeFileAtomic(join(service, 'hospital-api.env'), 'FHIR_API_KEY=y\n', { mode: 0o600 });
    expect([statSync(join(service, 'hospital-api.env')).uid, statSync(join(service, 'hospital-api.env')).gid]).toEqual([4242, 4343]);
    writeSecretFile(join(dir, 'plain.txt'), 'x');
    expect(statSync(join(dir, 'plain.txt')).uid).toBe(statSync(dir).uid);
  });
});

describe('safeEqual', () => {
  it('compares secrets of any length', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });
});

describe('secretDigest', () => {
  it('is the SHA-256 of the secret, the same for the same secret and apart for any other', () => {
    // FIPS 180-2 test vector: SHA-256("abc")
    expect(Buffer.from(secretDigest('abc'), 'base64').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(secretDigest('k-0123456789')).toBe(secretDigest('k-0123456789'));
    expect(secretDigest('k-0123456789')).not.toBe(secretDigest('k-0123456788'));
    expect(secretDigest('k-0123456789')).not.toContain('0123456789');
  });
});

describe('env files', () => {
  it('round-trips values with quotes, backslashes and spaces', () => {
    const dir = tempDir();
    const path = join(dir, '.env');
    const values = {
      A_KEY: 'x"y\\z',
      QUOTES: `it's "x"`,
      SPACED: 'a b  c',
      URL: 'https://h:1/p?q=1#f',
      EMPTY: '',
    };
    writeFileSync(path, formatEnvFile(values, 'generated'));
    expect(readEnvFile(path)).toEqual(values);
    expect(readEnvFile(join(dir, 'missing'))).toEqual({});
  });

  it('rejects invalid names and values it cannot write back unchanged', () => {
    expect(() => formatEnvFile({ 'bad-name': 'x' })).toThrow(/invalid variable name/);
    expect(() => formatEnvFile({ A: 'two\nlines' })).toThrow(/single line/);
    expect(() => formatEnvFile({ A: `'"\`` })).toThrow(/quote/);
  });
});

describe('listen addresses and ports', () => {
  it('parses host:port forms and tells loopback apart', () => {
    expect(parseListen('127.0.0.1:8001', 'X')).toEqual({ host: '127.0.0.1', port: 8001 });
    expect(parseListen('[::1]:9', 'X')).toEqual({ host: '::1', port: 9 });
    expect(() => parseListen('nope', 'ADMIN_LISTEN')).toThrow(/ADMIN_LISTEN/);
    expect(() => parseListen('h:70000', 'X')).toThrow();
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('localhost')).toBe(true);
    expect(isLoopback('0.0.0.0')).toBe(false);
    expect(isLoopback('10.0.0.1')).toBe(false);
  });

  it('sees a taken port as taken', async () => {
    const port = await freePort();
    expect(await isPortFree(port)).toBe(true);
    const server = createServer();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    expect(await isPortFree(port)).toBe(false);
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('hands out distinct ports in one call, each free again afterwards', async () => {
    const ports = await freePorts(256);
    expect(new Set(ports).size).toBe(256);
    for (const port of ports.slice(0, 8)) expect(await isPortFree(port)).toBe(true);
  });
});

describe('writeFileAtomic into an impossible directory', () => {
  it('reports ERR_FILE_WRITE, not the cleanup failure', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'file'), 'x');
    expect(() => writeFileAtomic(join(dir, 'file', 'child.json'), '{}')).toThrow(/Cannot write .*child\.json/);
  });
});
