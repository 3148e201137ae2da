/**
 * The part of a stack file a later phase of one start changes: the services whose definition differs
 * from the file the phase before deployed, with the file's networks, secrets and volumes, for a
 * `docker stack deploy` without --prune (which leaves the services the file does not name as they are).
 *
 * Why not the whole file again: every service update resets the service's spec version and its update
 * status (swarmkit manager/controlapi/service.go, UpdateService: `service.SpecVersion =
 * service.Meta.Version.Copy()`, `service.UpdateStatus = nil`), even when nothing in the spec changed.
 * A task of a service still rolling from the phase before that is pending for a moment (its node's
 * port or max_replicas_per_node held by the task it replaces) then carries an older spec version
 * than its service, and the scheduler drops it from its retry queue without a word (manager/scheduler/
 * scheduler.go, noSuitableNode: a task of an older revision is neither given an error nor enqueued
 * again; moby/moby#53722). The roll then waits for it for ever, as swarmkit's updater has no time-out.
 * The same update would also make the rolled spec the service's PreviousSpec, so a failed roll's
 * automatic rollback (update_config failure_action: rollback) would go back to the new spec itself.
 */
import { isDeepStrictEqual } from 'node:util';
import { parseDocument } from 'yaml';
import { STACK_YAML } from './render.js';

export interface StackChanges {
  /** The services `after` defines otherwise than `before` (or that `before` does not have), in `after`'s order. */
  services: string[];
  /** `after` with only those services. */
  text: string;
}

function servicesOf(value: unknown): Record<string, unknown> {
  return (value as { services?: Record<string, unknown> } | null)?.services ?? {};
}

export function stackChanges(before: string, after: string): StackChanges {
  const was = servicesOf(parseDocument(before, STACK_YAML).toJS());
  const doc = parseDocument(after, STACK_YAML);
  const now = servicesOf(doc.toJS());
  const services = Object.keys(now).filter((name) => !Object.hasOwn(was, name) || !isDeepStrictEqual(was[name], now[name]));
  for (const name of Object.keys(now)) if (!services.includes(name)) doc.deleteIn(['services', name]);
  return { services, text: doc.toString() };
}
