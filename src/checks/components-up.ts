/** §4.5.1: the long-running components report Up (one-shot jobs excluded by the runtime). */
import type { Check } from './types.js';

export const componentsUp: Check = {
  id: 'components-up',
  spec: '4.5.1',
  title: 'Long-running components report Up',
  mandatory: true,
  async run(ctx) {
    const list = await ctx.runtime.components();
    if (list.length === 0) {
      return { status: 'fail', summary: 'no component is running', detail: '', hint: 'Start the stack: `hospital-api up`.' };
    }
    // A degraded component (the gateway serving its last good configuration while its state file is
    // invalid) is not Up: the next restart would not bring it back (issue 12).
    const down = list.filter((c) => c.state !== 'up');
    const detail = list.map((c) => `${c.name}: ${c.state} (${c.detail})`).join('; ');
    const degraded = down.filter((c) => c.state === 'degraded');
    if (degraded.length === down.length && degraded.length) {
      return {
        status: 'fail',
        summary: `degraded: ${degraded.map((c) => `${c.name} (${c.detail.replace(/^degraded: /, '')})`).join('; ')}`,
        detail,
        hint: 'See `hospital-api status`; fix the gateway state file (or restore it from a backup) before the next restart.',
      };
    }
    if (down.length) {
      return {
        status: 'fail',
        summary: `not up: ${down.map((c) => c.name).join(', ')}`,
        detail,
        hint: 'See `hospital-api status` and `hospital-api logs <component>`.',
      };
    }
    return { status: 'pass', summary: `${list.length} up: ${list.map((c) => c.name).join(', ')}`, detail };
  },
};
