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
    const down = list.filter((c) => c.state !== 'up');
    const detail = list.map((c) => `${c.name}: ${c.state} (${c.detail})`).join('; ');
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
