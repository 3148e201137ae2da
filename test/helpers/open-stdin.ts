/**
 * Runs a program with a stdin that stays open after what was written to it: the end of
 * input never comes, as when the Docker engine loses the close of an exec's stdin
 * (moby/moby#37870). Resolves with the exit code and output, or 'hung' when it has not
 * exited within `ms`; the program is killed either way.
 */
import { execa } from 'execa';

export type OpenStdinResult = { exitCode: number | undefined; stdout: string } | 'hung';

export async function runWithOpenStdin(file: string, args: string[], written: string, ms = 10_000): Promise<OpenStdinResult> {
  const child = execa(file, args, { reject: false, stdin: 'pipe' });
  child.stdin!.write(written);
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms)));
  try {
    const r = await Promise.race([child, hung]);
    return r === 'hung' ? r : { exitCode: r.exitCode, stdout: String(r.stdout) };
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
    await child.catch(() => undefined);
  }
}
