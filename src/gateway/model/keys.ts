/** key-auth key generation (Kong's kong/tools/rand.lua random_string, for the `auto` key of kong/plugins/key-auth/daos.lua). */
import { randomBytes, randomInt } from 'node:crypto';

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** 32 alphanumeric chars: 24 random bytes base64-encoded, `/` and `+` replaced with random letters. */
export function generateApiKey(): string {
  return randomBytes(24)
    .toString('base64')
    .replace(/[/+]/g, () => LETTERS[randomInt(LETTERS.length)] as string);
}
