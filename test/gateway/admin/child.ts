/** The real `hospital-api gateway` as a child process, for tests that need it out of the test's own event loop. */
import type { ResultPromise } from 'execa';
import { startCli } from '../../helpers/cli.js';

export interface GatewayChild {
  child: ResultPromise;
  admin: string;
  proxy: string;
  /** Everything the child wrote to stderr so far. */
  stderr(): string;
  /** SIGKILL: works even when the child's event loop is stuck. */
  kill(): Promise<void>;
}

/** Starts the gateway on ephemeral loopback ports; resolves on its ready line, rejects if it exits first. */
export async function startGatewayChild(statePath: string, extra: string[] = []): Promise<GatewayChild> {
  const child = startCli(['gateway', '--admin-listen', '127.0.0.1:0', '--proxy-listen', '127.0.0.1:0', '--proxy-ssl-listen', 'off', '--state', statePath, ...extra]);
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${err}`)), 30_000);
    child.stderr?.on('data', () => {
      const m = /gateway ready: admin=(\S+) proxy=(\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    void child.then((r) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited ${r.exitCode}: ${err}`));
    });
  });
  return {
    child,
    admin: `http://${ready[1]}`,
    proxy: `http://${ready[2]}`,
    stderr: () => err,
    async kill() {
      child.kill('SIGKILL');
      await child;
    },
  };
}
