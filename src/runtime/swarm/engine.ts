/**
 * Whether this host's Docker engine can deploy a stack: it answers, it is a
 * node of an active swarm, and a manager (only managers take `docker stack
 * deploy`; Docker docs, "docker info": Swarm.LocalNodeState, ControlAvailable
 * is true on a manager). Through execa, argv only.
 */
import { execa } from 'execa';
import { dockerEngineAnswers } from '../container/compose.js';

/** `docker info --format '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}'` → whether this is an active manager. */
export function isActiveManager(infoLine: string): boolean {
  return infoLine.trim() === 'active true';
}

export async function swarmManagerHere(bin = 'docker'): Promise<boolean> {
  if (!(await dockerEngineAnswers(bin))) return false;
  try {
    const res = await execa(bin, ['info', '--format', '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}'], { reject: false, timeout: 15_000, stdin: 'ignore' });
    return res.exitCode === 0 && isActiveManager(String(res.stdout));
  } catch {
    return false;
  }
}
