/** Negative check (issue 5): the key-auth route with a wrong key → 401 (Kong's kong/plugins/key-auth/handler.lua). */
import { randomBytes } from 'node:crypto';
import { expect401 } from './gateway-probe.js';
import type { Check } from './types.js';

export const keyAuthWrongKey: Check = {
  id: 'key-auth-wrong-key',
  spec: 'extra',
  title: 'The key-auth route refuses a wrong key (401)',
  mandatory: true,
  run: (ctx) => expect401(ctx, '/fhir-api-key-auth/metadata', { apikey: `wrong-${randomBytes(12).toString('hex')}` }, 'a wrong key'),
};
