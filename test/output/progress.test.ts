/**
 * Progress on stderr: redrawn in place on a terminal that can, whole lines every few seconds
 * elsewhere, nothing with -q. TERM=dumb has no cursor movement: it gets lines, never escapes.
 */
import { describe, expect, it } from 'vitest';
import { createProgress } from '../../src/output/progress.js';

function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = { isTTY, text: '', write: (chunk: string) => ((s.text += chunk), true) };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe('progress', () => {
  it('redraws in place on a terminal', () => {
    const out = stream(true);
    const p = createProgress('loading', 10, out, 2000, { env: { TERM: 'xterm-256color' } });
    p.update(5);
    p.finish('ok');
    expect(out.text).toContain('\r\x1b[K');
    expect(out.text).toMatch(/loading done in \d+\.\ds \(ok\)\n$/);
  });

  it('TERM=dumb: whole lines and no escape, though it is a TTY', () => {
    const out = stream(true);
    const p = createProgress('loading', 10, out, 0, { env: { TERM: 'dumb' } });
    p.update(5);
    p.finish('ok');
    expect(out.text).not.toContain('\x1b');
    expect(out.text).not.toContain('\r');
    expect(out.text.split('\n').filter(Boolean)).toEqual(['loading 5/10 50%', expect.stringMatching(/^loading done in/)]);
  });

  it('-q: nothing', () => {
    const out = stream(true);
    const p = createProgress('loading', 10, out, 0, { quiet: true });
    p.update(5);
    p.finish();
    expect(out.text).toBe('');
  });
});
