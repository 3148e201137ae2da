/**
 * Negative check (issue 5; the original deployment's docker-compose.yml in
 * health-tag/hospital-fhir-node published Kong's 8001/8444): the gateway admin port
 * does not answer on any of the host's non-loopback addresses.
 */
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Check } from './types.js';

function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && !a.internal && !(a.family === 'IPv6' && a.address.startsWith('fe80')))
    .map((a) => (a as { address: string }).address);
}

function answers(host: string, port: number, timeoutMs = 1500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (value: boolean): void => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export const adminNotExposed: Check = {
  id: 'admin-not-exposed',
  spec: 'extra',
  title: "The gateway admin port does not answer on the host's non-loopback addresses",
  mandatory: true,
  async run(ctx) {
    const port = ctx.config.ports.gatewayAdmin;
    const addresses = hostAddresses();
    if (addresses.length === 0) return { status: 'skip', summary: 'the host has no non-loopback address', detail: '' };
    const open: string[] = [];
    for (const a of addresses) if (await answers(a, port)) open.push(a);
    const detail = `port ${port} probed on ${addresses.join(', ')}`;
    if (open.length) {
      return {
        status: 'fail',
        summary: `admin port ${port} answers on ${open.join(', ')}`,
        detail,
        hint: 'Bind the admin API to 127.0.0.1 (native) or remove its published port (docker).',
      };
    }
    return { status: 'pass', summary: `port ${port} closed on ${addresses.length} address(es)`, detail };
  },
};
