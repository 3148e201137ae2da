// Preloaded into the real CLI by upgrade.test.ts (NODE_OPTIONS=--import): the moment the
// process has written a stderr line containing STOP_AT_LINE, it stops itself (SIGSTOP) so
// that it cannot take one more step; the test, which watches stderr, then SIGKILLs it.
// This is how the harness kills an upgrade "between two steps" without any hook in the
// shipped code: the CLI only prints its progress, as it does for a person at a terminal.
// Writes to a pipe are synchronous on Linux (https://nodejs.org/api/process.html#a-note-on-process-io),
// so the line is in the pipe before the stop.
const marker = process.env.STOP_AT_LINE;
if (marker) {
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk, ...rest) => {
    const ok = write(chunk, ...rest);
    if (String(chunk).includes(marker)) process.kill(process.pid, 'SIGSTOP');
    return ok;
  };
}
