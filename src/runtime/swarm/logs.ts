/**
 * The swarm runtime's logs() (`hospital-api logs [component] [-f]`): each service's
 * log as the manager gathers it from every node that ran its tasks (`docker service
 * logs`, Docker docs "docker service logs": the json-file driver the stack sets).
 * Each line keeps Docker's prefix, `<stack>_<service>.<slot>@<node> | `, less the
 * stack's name: with replicas on several nodes, which one wrote a line matters.
 * The Hospital API's audit log is written on each node that runs an API task (its
 * api-audit volume there), so it is not gathered here: the error says where it is
 * (swarmAuditLogElsewhere).
 */
import { execa } from 'execa';
import { HospitalApiError } from '../../errors/index.js';
import { byLines } from '../log-files.js';
import { AUDIT_LOG_COMPONENT, type LogsOptions } from '../types.js';
import type { DockerCli } from '../container/compose.js';
import { swarmAuditLogElsewhere } from './profile.js';

/** `hospital-api-0123abcd_kong.1@n2    | text` → `kong.1@n2 | text`. */
export function withoutStackName(stack: string, text: string): string {
  return text
    .split('\n')
    .map((line) => (line.startsWith(`${stack}_`) ? line.slice(stack.length + 1).replace(/^(\S+)\s+\|/, '$1 |') : line))
    .join('\n');
}

export async function swarmLogs(cli: DockerCli, docker: string, stack: string, services: readonly string[], o: LogsOptions): Promise<void> {
  if (o.component === AUDIT_LOG_COMPONENT) {
    throw new HospitalApiError('ERR_USAGE', { detail: swarmAuditLogElsewhere(stack) });
  }
  const wanted = o.component ? [o.component] : [...services];
  for (const name of wanted) {
    if (!services.includes(name)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component: name, known: services.join(', ') });
  }
  for (const name of wanted) {
    const res = await cli.run(['service', 'logs', '--no-task-ids', '--tail', String(o.lines), `${stack}_${name}`], { timeoutMs: 120_000 });
    // a service's own output comes on both streams of `docker service logs`, as the task wrote it
    const text = withoutStackName(stack, [res.stdout, res.stderr].filter((t) => t.trim()).join('\n'));
    if (text.trim()) o.write(name, text.endsWith('\n') ? text : `${text}\n`);
  }
  if (!o.follow || o.signal.aborted) return;
  await Promise.all(
    wanted.map(async (name) => {
      const child = execa(docker, ['service', 'logs', '--no-task-ids', '--follow', '--tail', '0', `${stack}_${name}`], {
        reject: false,
        stdin: 'ignore',
        cancelSignal: o.signal,
        buffer: false,
      });
      // whole lines only, per stream
      for (const stream of [child.stdout, child.stderr]) stream?.on('data', byLines((text) => o.write(name, withoutStackName(stack, text))));
      await child;
    }),
  );
}
