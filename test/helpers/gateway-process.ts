/**
 * The real `hospital-api gateway` as a child process on ephemeral loopback
 * ports, returned once its ready line names them: the one way tests start it
 * (the status listener only when asked for with `--status-listen`).
 */
import type { ResultPromise } from 'execa';
import { startCli } from './cli.js';

export interface GatewayProcess {
  child: ResultPromise;
  admin: string;
  proxy: string;
  /** http://host:port of the status listener, or null without one. */
  status: string | null;
}

export async function startGatewayProcess(state: string, extra: string[] = []): Promise<GatewayProcess> {
  const child = startCli(['gateway', '--admin-listen', '127.0.0.1:0', '--proxy-listen', '127.0.0.1:0', '--state', state, ...extra]);
  let err = '';
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${err}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /gateway ready: admin=(\S+) proxy=(\S+)(?: proxy-ssl=\S+)?(?: status=(\S+))?/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    void child.then((r) => reject(new Error(`exited ${r.exitCode}: ${err}`)));
  });
  return { child, admin: `http://${ready[1]}`, proxy: `http://${ready[2]}`, status: ready[3] ? `http://${ready[3]}` : null };
}
