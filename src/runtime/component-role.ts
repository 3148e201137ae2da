/**
 * The three roles every runtime runs, by the names its `components()` reports
 * (its profile's componentNames: native and systemd name them by role, docker
 * by compose service). Callers outside src/runtime/ ask by role.
 */
import type { ComponentRole } from './profile.js';
import { profileOf } from './profiles.js';
import type { Runtime } from './types.js';

export type { ComponentRole } from './profile.js';

/** The name `runtime.components()` gives the component that plays `role`. */
export function componentNameOf(runtime: Pick<Runtime, 'name'>, role: ComponentRole): string {
  return profileOf(runtime.name).componentNames[role];
}

/** Whether the component playing `role` is running and answering (up, or degraded). */
export async function roleIsUp(runtime: Pick<Runtime, 'name' | 'components'>, role: ComponentRole): Promise<boolean> {
  const name = componentNameOf(runtime, role);
  return (await runtime.components()).some((c) => c.name === name && (c.state === 'up' || c.state === 'degraded'));
}
