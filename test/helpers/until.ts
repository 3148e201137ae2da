/**
 * The one way a test waits for something: poll a condition until it holds, or
 * fail naming what was awaited. Never a sleep that hopes the thing happened.
 */

export interface UntilOptions<T> {
  /** What is awaited, for the failure message ("hapi healthy"). */
  what: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between probes (default 100 ms). */
  intervalMs?: number;
  /** When the probe's value counts as done (default: not null, undefined or false). */
  ok?: (value: T) => boolean;
}

type Done<T> = Exclude<T, null | undefined | false>;

/**
 * Calls `probe` until its value is done (see `ok`), and returns that value. A
 * probe that throws has not succeeded yet; on time-out the error says what was
 * awaited and the last value or error seen.
 */
export async function until<T>(probe: () => T | Promise<T>, options: UntilOptions<T>): Promise<Done<T>> {
  const { what, timeoutMs = 10_000, intervalMs = 100 } = options;
  const ok = options.ok ?? ((v: T) => v !== null && v !== undefined && v !== false);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let last: string;
    try {
      const value = await probe();
      if (ok(value)) return value as Done<T>;
      last = `last value: ${describe(value)}`;
    } catch (err) {
      last = `last error: ${(err as Error)?.message ?? String(err)}`;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${last})`);
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.length > 300 ? `${text.slice(0, 300)}…` : text;
  } catch {
    return String(value);
  }
}
