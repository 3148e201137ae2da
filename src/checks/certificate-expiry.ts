/** Issue 5: the gateway certificate does not expire within 30 days (a warning, not a failure). */
import type { Check } from './types.js';

const WARN_DAYS = 30;

export const certificateExpiry: Check = {
  id: 'certificate-expiry',
  spec: 'extra',
  title: `The gateway certificate is valid for more than ${WARN_DAYS} days`,
  mandatory: false,
  async run(ctx) {
    let cert;
    try {
      cert = (await ctx.facts.gatewayCertificate()).info;
    } catch {
      // certificate-chain says why
      return { status: 'skip', summary: 'no verified certificate to inspect', detail: '' };
    }
    const days = Math.floor((Date.parse(cert.validTo) - Date.now()) / 86_400_000);
    if (days < WARN_DAYS) {
      return { status: 'warn', summary: `expires in ${days} days (${cert.validTo})`, detail: '', hint: 'Renew the gateway certificate.' };
    }
    return { status: 'pass', summary: `valid until ${cert.validTo} (${days} days)`, detail: '' };
  },
};
