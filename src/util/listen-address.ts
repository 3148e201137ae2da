/** Parses `host:port` listen addresses and tells loopback hosts apart. */
import { isIP } from 'node:net';
import { HospitalApiError } from '../errors/index.js';

export interface ListenAddress {
  host: string;
  port: number;
}

export function parseListen(value: string, name: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new HospitalApiError('ERR_CONFIG_INVALID', { name, detail: `expected host:port, got "${value}"` });
  }
  return { host: (m[1] ?? m[2]) as string, port };
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
