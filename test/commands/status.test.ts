/**
 * `hospital-api status` exits 3 when a component is not running, as
 * `systemctl status` does for an inactive unit, so scripts and monitoring can
 * rely on the code; test/runtime/native/supervisor.test.ts checks 0 (every
 * component up) and 3 against a running, crashing and stopped stack.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { makeNativeInstall } from '../helpers/native-install.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(() => removeTempDirs());

describe('hospital-api status', () => {
  it('exits 3 naming the components that are not running (table), and with --json prints one document', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    const table = await runCli(['status', '--dir', dir]);
    expect(table.exitCode, String(table.stderr)).toBe(3);
    expect(String(table.stdout)).toContain('not running: fhir, gateway, api (exit 3)');

    const json = await runCli(['status', '--dir', dir, '--json']);
    expect(json.exitCode).toBe(3);
    const doc = JSON.parse(String(json.stdout)) as { ok: boolean; result: { down: string[]; allUp: boolean; components: Array<{ state: string }> } };
    expect(doc.result.down).toEqual(['fhir', 'gateway', 'api']);
    expect(doc.result.allUp).toBe(false);
    expect(doc.result.components.every((c) => c.state === 'down')).toBe(true);
  });
});
