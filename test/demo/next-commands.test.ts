/**
 * The commands the demo prints last: `npm stop` and plain `hospital-api status`
 * reach only the default installation, so a demo anywhere else is named by its
 * --dir, quoted for a POSIX shell when its path needs it.
 */
import { resolve } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { nextCommands } from '../../src/demo/flow.js';

describe('the demo\'s closing commands', () => {
  it('the default installation: plain commands and npm stop', () => {
    const line = nextCommands('.hospital-api', {});
    expect(line).toBe('Status: `hospital-api status`   Logs: `hospital-api logs -f`   Stop: `npm stop`');
    expect(nextCommands('/srv/demo', { HOSPITAL_API_DIR: '/srv/demo' })).toBe(line);
  });

  it('another folder: every command names it, and npm stop is not offered', () => {
    const line = nextCommands('/srv/demo', {});
    expect(line).toBe('Status: `hospital-api status --dir /srv/demo`   Logs: `hospital-api logs -f --dir /srv/demo`   Stop: `hospital-api down --dir /srv/demo`');
  });

  it('a folder with a space and a quote is one shell word', async () => {
    const dir = "/tmp/it's a demo";
    const line = nextCommands(dir, {});
    const stop = /`hospital-api down --dir (.+?)`/.exec(line)![1]!;
    // the shell reads it back as the one path
    const echoed = await execa('sh', ['-c', `printf %s ${stop}`]);
    expect(echoed.stdout).toBe(resolve(dir));
  });
});
