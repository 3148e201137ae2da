/** §4.5.2 (first half), spec §4.1: GET /api/health-check → 200 `{}`. */
import { isDeepStrictEqual } from 'node:util';
import { describeFailure, httpGet } from './http.js';
import type { Check } from './types.js';

export const apiHealth: Check = {
  id: 'api-health',
  spec: '4.5.2',
  title: 'Hospital API health check returns {}',
  mandatory: true,
  async run(ctx) {
    const url = `${ctx.urls.apiBase}/api/health-check`;
    try {
      const res = await httpGet(url);
      const ok = res.status === 200 && isDeepStrictEqual(res.body, {});
      return {
        status: ok ? 'pass' : 'fail',
        summary: ok ? '200 {}' : `${res.status} ${JSON.stringify(res.body).slice(0, 80)}`,
        detail: `GET ${url}`,
        httpStatus: res.status,
        ...(ok ? {} : { hint: 'See `hospital-api logs api`.' }),
      };
    } catch (err) {
      return { status: 'fail', summary: 'no answer', detail: `GET ${url}: ${describeFailure(err)}`, hint: 'Is the Hospital API running?' };
    }
  },
};
