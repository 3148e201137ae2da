/** Negative check (issue 5): the fhir-api route without credentials → 401 (Kong's kong/plugins/basic-auth/access.lua). */
import { expect401 } from './gateway-probe.js';
import type { Check } from './types.js';

export const basicAuthRequired: Check = {
  id: 'basic-auth-required',
  spec: 'extra',
  title: 'The fhir-api route refuses a request without credentials (401)',
  mandatory: true,
  run: (ctx) => expect401(ctx, '/fhir-api/metadata', {}, 'a request without credentials'),
};
