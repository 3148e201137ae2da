/** Negative check (issue 5): the key-auth route without a key → 401 (Kong's kong/plugins/key-auth/handler.lua). */
import { expect401 } from './gateway-probe.js';
import type { Check } from './types.js';

export const keyAuthNoKey: Check = {
  id: 'key-auth-no-key',
  spec: 'extra',
  title: 'The key-auth route refuses a request without a key (401)',
  mandatory: true,
  run: (ctx) => expect401(ctx, '/fhir-api-key-auth/metadata', {}, 'a request without a key'),
};
