/**
 * request-size-limiting (Kong's kong/plugins/request-size-limiting/handler.lua): 413 "Request size limit exceeded" (417
 * with Expect: 100-continue) from Content-Length; without one, require_content_length → 411 (as Kong, before any
 * body is read), else a body in any other framing (HTTP/1.1 chunked, an HTTP/2 stream without a length) is
 * buffered up to the limit and refused past it, as Kong reads it with kong.request.get_raw_body. Until issue 45
 * only a chunked body was counted: an HTTP/2 body without a length passed unchecked (60 MB reached FHIR).
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
      if (conf.require_content_length) return { status: 411, message: 'A valid Content-Length header is required' };
      if (!state.hasBody) return undefined;
      return state.readBody(limit).then((body) => (body === null ? tooLarge(state) : undefined));
    },
  };
}

export const requestSizeLimitingHandler: PluginHandler = { name: 'request-size-limiting', compile };
