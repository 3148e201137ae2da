/** The colour decision (src/output/colour.ts): environment and TTY in, chalk level out. */
import { describe, expect, it } from 'vitest';
import { colourLevel } from '../../src/output/colour.js';

describe('colourLevel', () => {
  it('colours a terminal and nothing else by default', () => {
    expect(colourLevel({}, true)).toBe(1);
    expect(colourLevel({}, false)).toBe(0);
    expect(colourLevel({ TERM: 'xterm-256color' }, true)).toBe(1);
  });

  it('NO_COLOR with any value turns it off, even against FORCE_COLOR', () => {
    for (const value of ['1', '0', 'false', 'yes']) {
      expect(colourLevel({ NO_COLOR: value }, true), value).toBe(0);
      expect(colourLevel({ NO_COLOR: value, FORCE_COLOR: '1' }, true), value).toBe(0);
      expect(colourLevel({ NO_COLOR: value, FORCE_COLOR: '3' }, false), value).toBe(0);
    }
  });

  it('FORCE_COLOR=0 (or false) turns it off on a terminal', () => {
    expect(colourLevel({ FORCE_COLOR: '0' }, true)).toBe(0);
    expect(colourLevel({ FORCE_COLOR: 'false' }, true)).toBe(0);
  });

  it('TERM=dumb turns it off on a terminal', () => {
    expect(colourLevel({ TERM: 'dumb' }, true)).toBe(0);
  });

  it('FORCE_COLOR=1/2/3 turns it on at that level, off a terminal and on a dumb one', () => {
    expect(colourLevel({ FORCE_COLOR: '1' }, false)).toBe(1);
    expect(colourLevel({ FORCE_COLOR: '2' }, false)).toBe(2);
    expect(colourLevel({ FORCE_COLOR: '3' }, false)).toBe(3);
    expect(colourLevel({ FORCE_COLOR: 'true' }, false)).toBe(1);
    expect(colourLevel({ FORCE_COLOR: '1', TERM: 'dumb' }, false)).toBe(1);
  });
});
