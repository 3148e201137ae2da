/**
 * The docker runtime's logs() (`hospital-api logs [component] [-f]`): each
 * container's log as Compose prints it (`logs --no-color --tail N`, the same
 * flags on Compose v1 and v2), and the Hospital API's audit log, which the API
 * container writes to docker/api-logs/ on the host.
 *
 * Compose puts `<container> | ` before every line (v1 `name_1`, v2 `name-1`;
 * v1 has no `--no-log-prefix`): the prefix is cut, and the command puts the
 * service's own name back when it prints several.
 */
import { HospitalApiError } from '../../errors/index.js';
import { byLines, followLogs, tailLog } from '../log-files.js';
import { AUDIT_LOG_COMPONENT, type LogsOptions } from '../types.js';
import type { DockerCli } from '../container/compose.js';
import { LONG_RUNNING_SERVICES } from './parse.js';

/** The longest Compose prefix cut (a container name is at most a few dozen characters). */
const MAX_PREFIX = 128;

/** "kong_1  | text" → "text", line by line; a line with no prefix stays as it is. */
export function withoutComposePrefix(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const bar = line.indexOf('|');
      if (bar < 0 || bar > MAX_PREFIX) return line;
      return line.slice(line[bar + 1] === ' ' ? bar + 2 : bar + 1);
    })
    .join('\n');
}

/** `extra`: services the install adds (scheduled acceptance's two, issue 46). */
export async function dockerLogs(cli: () => Promise<DockerCli>, auditLogFile: string, o: LogsOptions, extra: readonly string[] = []): Promise<void> {
  const known = [...LONG_RUNNING_SERVICES, ...extra, AUDIT_LOG_COMPONENT];
  const wanted = o.component ? [o.component] : known;
  for (const name of wanted) {
    if (!known.includes(name)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component: name, known: known.join(', ') });
  }
  const services = wanted.filter((n) => n !== AUDIT_LOG_COMPONENT);
  const c = services.length ? await cli() : null;
  for (const name of wanted) {
    const text = name === AUDIT_LOG_COMPONENT ? tailLog(auditLogFile, o.lines) : withoutComposePrefix((await c!.compose(['logs', '--no-color', '--tail', String(o.lines), name])).stdout);
    if (text.trim()) o.write(name, text.endsWith('\n') ? text : `${text}\n`);
  }
  if (!o.follow) return;
  await Promise.all([
    ...services.map((name) => {
      const write = byLines((text) => o.write(name, withoutComposePrefix(text)));
      return c!.composeStream(['logs', '--no-color', '--follow', '--tail', '0', name], write, o.signal);
    }),
    ...(wanted.includes(AUDIT_LOG_COMPONENT) ? [followLogs({ [AUDIT_LOG_COMPONENT]: auditLogFile }, o.write, o.signal)] : []),
  ]);
}
