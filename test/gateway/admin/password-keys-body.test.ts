import { describe, expect, it } from 'vitest';
import { parseForm } from '../../../src/gateway/admin/body.js';
import { generateApiKey } from '../../../src/gateway/model/keys.js';
import {
  hashBasicAuthPassword,
  kongSha1Password,
  verifyBasicAuthPassword,
  verifyBasicAuthPasswordAsync,
} from '../../../src/gateway/model/password.js';

const CONSUMER = '5d1f5e7a-3c1b-4b7e-9a55-8d0c2f1e4a77';

describe('basic-auth password hashing (docs/gateway-admin.md)', () => {
  it('produces a salted scrypt string that is never the password and differs per credential', () => {
    const a = hashBasicAuthPassword('s3cret', CONSUMER);
    const b = hashBasicAuthPassword('s3cret', CONSUMER);
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(a).not.toContain('s3cret');
    expect(a).not.toBe(b);
    expect(verifyBasicAuthPassword('s3cret', CONSUMER, a)).toBe(true);
    expect(verifyBasicAuthPassword('s3cret', CONSUMER, b)).toBe(true);
    expect(verifyBasicAuthPassword('s3cret!', CONSUMER, a)).toBe(false);
    expect(verifyBasicAuthPassword('', CONSUMER, a)).toBe(false);
  });

  it('verifies again from the cache and asynchronously, and a wrong password is still refused after a hit', async () => {
    const h = hashBasicAuthPassword('pw', CONSUMER);
    expect(verifyBasicAuthPassword('pw', CONSUMER, h)).toBe(true);
    expect(verifyBasicAuthPassword('pw', CONSUMER, h)).toBe(true);
    expect(verifyBasicAuthPassword('pw2', CONSUMER, h)).toBe(false);
    expect(await verifyBasicAuthPasswordAsync('pw', CONSUMER, h)).toBe(true);
    const fresh = hashBasicAuthPassword('other', CONSUMER);
    expect(await verifyBasicAuthPasswordAsync('other', CONSUMER, fresh)).toBe(true);
    expect(await verifyBasicAuthPasswordAsync('nope', CONSUMER, fresh)).toBe(false);
  });

  it("accepts Kong's SHA-1(password + consumer_id) form and rejects malformed or absurd hashes", () => {
    const sha1 = kongSha1Password('pw', CONSUMER);
    expect(sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(verifyBasicAuthPassword('pw', CONSUMER, sha1)).toBe(true);
    expect(verifyBasicAuthPassword('pw', '00000000-0000-4000-8000-000000000000', sha1)).toBe(false);
    expect(verifyBasicAuthPassword('pw', CONSUMER, 'pw')).toBe(false);
    expect(verifyBasicAuthPassword('pw', CONSUMER, 'scrypt$1073741824$8$1$AAAA$AAAA')).toBe(false);
  });
});

describe('key-auth key generation (kong/tools/rand.lua)', () => {
  it('makes 32 alphanumeric characters, different every time', () => {
    const keys = new Set(Array.from({ length: 200 }, generateApiKey));
    expect(keys.size).toBe(200);
    for (const k of keys) expect(k).toMatch(/^[A-Za-z0-9]{32}$/);
  });
});

describe('form bodies (kong/api/api_helpers.lua)', () => {
  it('nests dotted keys and collects arrays', () => {
    expect(parseForm('name=rate-limiting&config.minute=5&config.policy=local&service.id=abc')).toEqual({
      name: 'rate-limiting',
      config: { minute: '5', policy: 'local' },
      service: { id: 'abc' },
    });
    expect(parseForm('paths[]=/a&paths[]=/b&hosts=x&hosts=y&config.key_names[1]=k1&config.key_names[2]=k2')).toEqual({
      paths: ['/a', '/b'],
      hosts: ['x', 'y'],
      config: { key_names: ['k1', 'k2'] },
    });
  });
});
