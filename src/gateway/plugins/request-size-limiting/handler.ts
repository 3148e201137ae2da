/**
 * request-size-limiting (Kong's kong/plugins/request-size-limiting/handler.lua): 413 "Request size limit exceeded" (417
 * with Expect: 100-continue) from Content-Length; a chunked body is buffered
 * up to the limit; require_content_length → 411 when neither is present.
 */
import type { AccessResult, CompileEnv, PluginHandler, PluginRunner, RequestState } from '../types.js';
import type { RequestSizeLimitingConfig } from './schema.js';

const UNIT = { megabytes: 1048576, kilobytes: 1024, bytes: 1 } as const;
const TOO_LARGE = 'Request size limit exceeded';

function compile(raw: Readonly<Record<string, unknown>>, _env: CompileEnv): PluginRunner {
  const conf = raw as unknown as RequestSizeLimitingConfig;
  const limit = conf.allowed_payload_size * UNIT[conf.size_unit];
  const tooLarge = (state: RequestState) => ({
    status: state.header('expect')?.toLowerCase() === '100-continue' ? 417 : 413,
    message: TOO_LARGE,
  });
  return {
    name: 'request-size-limiting',
    access(state): AccessResult | Promise<AccessResult> {
      const length = state.header('content-length');
      if (length !== undefined) {
        return Number(length) > limit ? tooLarge(state) : undefined;
      }
      const chunked = state.header('transfer-encoding')?.toLowerCase().includes('chunked') ?? false;
      if (!chunked) {
        return conf.require_content_length ? { status: 411, message: 'A valid Content-Length header is required' } : undefined;
      }
      return state.readBody(limit).then((body) => (body === null ? tooLarge(state) : undefined));
    },
  };
}

export const requestSizeLimitingHandler: PluginHandler = { name: 'request-size-limiting', compile };
