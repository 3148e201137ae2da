/**
 * DEMO ONLY: access tokens for the platform stand-in, each bound to one
 * platform care id. Kept in <dir>/demo/tokens.json (mode 0600); never used by
 * a production path.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { installPaths } from '../install-dir/layout.js';
import { writeSecretFile } from '../util/atomic-write.js';
import { safeEqual } from '../util/constant-time.js';

export interface DemoToken {
  careId: string;
  token: string;
}

export function tokensPath(dir: string): string {
  return installPaths(dir).demoTokens;
}

export function readTokens(dir: string): DemoToken[] {
  const path = tokensPath(dir);
  if (!existsSync(path)) return [];
  return (JSON.parse(readFileSync(path, 'utf8')) as { tokens: DemoToken[] }).tokens;
}

/** One fresh random token per care id, written 0600. */
export function writeTokens(dir: string, careIds: string[]): DemoToken[] {
  const tokens = careIds.map((careId) => ({ careId, token: `demo-${randomBytes(18).toString('base64url')}` }));
  writeSecretFile(tokensPath(dir), JSON.stringify({ demo: true, tokens }, null, 2) + '\n');
  return tokens;
}

/** The care id a token is bound to. Compares every token in constant time, without an early exit. */
export function careIdFor(tokens: DemoToken[], presented: string): string | undefined {
  let found: string | undefined;
  for (const t of tokens) if (safeEqual(t.token, presented)) found = t.careId;
  return found;
}
