/**
 * `gateway export --dir <install dir>`: the configuration the installation's gateway serves,
 * read through its runtime's admin API (native: loopback; docker: inside the kong container)
 * as `consumer` and `verify` reach it, with GET /config, then parsed back into a configuration
 * so either export format can be written from it. Its keys stay in memory and in the output.
 */
import { parse as parseYaml } from 'yaml';
import { HospitalApiError } from '../errors/index.js';
import type { GatewayConfig } from '../gateway/model/types.js';
import { parseDeclarative } from '../gateway/declarative/parse.js';
import { openRuntime } from './index.js';

/** @throws ERR_RUNTIME_NOT_INSTALLED, ERR_RUNTIME_ADMIN_UNREACHABLE, ERR_GATEWAY_EXPORT_UNAVAILABLE */
export async function configFromInstall(dir: string): Promise<GatewayConfig> {
  const runtime = await openRuntime(dir);
  const res = await runtime.admin('GET', '/config');
  const yaml = (res.body as { config?: unknown } | null)?.config;
  if (res.status !== 200 || typeof yaml !== 'string') throw new HospitalApiError('ERR_GATEWAY_EXPORT_UNAVAILABLE', { dir, status: res.status });
  return parseDeclarative(parseYaml(yaml));
}
