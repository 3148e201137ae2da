/**
 * How the container runtimes replace a hung component (templates/compose.yaml and
 * templates/stack.yaml, "Hung components"): the probe's limits, and the shell health check of
 * the images that have a shell but no node (kong, Postgres).
 */
/**
 * How kong and hospital-api are replaced when hung (templates/compose.yaml, "Hung
 * components"): a probe intervalS after the previous one ends (Docker docs,
 * HEALTHCHECK: "then again interval seconds after each previous check
 * completes"), each given
 * timeoutS; after `failures` probes in a row without an answer the process is
 * killed and the container restarts. A hang is acted on within
 * failures × (intervalS + timeoutS) = 32 s. A process that never answered gets
 * startGraceS from the first probe that saw it; HAPI (hapi-watchdog) gets
 * hapiStartGraceS, since its first start creates its schema and a JVM on a small
 * host takes minutes to do so: a process killed before it ever answered would
 * only start that work again.
 */
export const HUNG_PROBE = Object.freeze({ intervalS: 5, timeoutS: 3, failures: 4, startGraceS: 60, hapiStartGraceS: 600 });

/** What a shell hung check probes, and how (shellHungCheck). */
export interface ShellProbe {
  /** Named in the log line: "no answer from <what> within …". */
  what: string;
  /** A shell command: exit 0 = answers and is healthy; notReadyExit = answers but is not healthy yet; anything else = no answer. */
  command: string;
  notReadyExit?: number;
  /** Seconds a process that never answered gets from the first probe that saw it; null: it is never killed before it has answered once. */
  graceS: number | null;
}

/**
 * The healthcheck script of a service whose image has a shell but no node (kong,
 * the Postgres databases), as templates/compose.yaml's "Hung components" says:
 * find the process docker-init started (the lowest pid whose parent is pid 1; proc(5) stat), keep
 * "<pid>:<starttime> <first seen> <answered once> <failures in a row>" in /tmp,
 * probe, and after HUNG_PROBE.failures probes in a row without an answer SIGKILL
 * that process so docker-init exits and the restart policy starts the container
 * again. Returned as the lines of a YAML block scalar under `- |` (10 spaces),
 * with `$` doubled for Compose's interpolation.
 */
export function shellHungCheck(p: ShellProbe, limits: { timeoutS: number; failures: number } = HUNG_PROBE): string {
  const mayKill = p.graceS === null ? '[ "$ok" = 1 ]' : `{ [ "$ok" = 1 ] || [ $((now - seen)) -ge ${p.graceS} ]; }`;
  const lines = [
    'f=/tmp/hospital-api-health; now=$(date +%s); main=; key=',
    'for s in /proc/[0-9]*/stat; do',
    '  { read -r l < "$s"; } 2>/dev/null || continue',
    '  set -- ${l##*") "}',
    // the lowest pid whose parent is docker-init: the glob is in text order, and an orphan reparented
    // to docker-init (a process a `docker exec` left) is younger, so higher, than the main process
    '  p=${s#/proc/}; p=${p%/stat}',
    '  if [ "$2" = 1 ] && { [ -z "$main" ] || [ "$p" -lt "$main" ]; }; then main=$p; key="$main:${20}"; fi',
    'done',
    'set -- $(cat "$f" 2>/dev/null)',
    'if [ -n "$key" ] && [ "$1" = "$key" ]; then seen=$2 ok=$3 n=$4; else seen=$now ok=0 n=0; fi',
    `${p.command}; rc=$?`,
    'if [ "$rc" = 0 ]; then echo "$key $seen 1 0" > "$f"; echo answers; exit 0; fi',
    ...(p.notReadyExit === undefined ? [] : [`if [ "$rc" = ${p.notReadyExit} ]; then echo "$key $seen 1 0" > "$f"; echo "answers, not ready"; exit 1; fi`]),
    'n=$((n + 1)); echo "$key $seen $ok $n" > "$f"',
    `m="no answer from ${p.what} within ${limits.timeoutS} s, $n probe(s) in a row"`,
    `if [ -n "$main" ] && [ "$n" -ge ${limits.failures} ] && ${mayKill}; then`,
    '  m="$m: SIGKILL to pid $main so the container restarts"; { echo "$m" >> /proc/1/fd/2; } 2>/dev/null; kill -KILL "$main"',
    'fi',
    'echo "$m"; exit 1',
  ];
  return lines.map((l) => `          ${l.replaceAll('$', () => '$$')}`).join('\n');
}

/**
 * A Postgres service's probe: pg_isready over TCP (during first initialisation the
 * entrypoint's temporary server listens on the unix socket only, docker-library/postgres
 * docker-entrypoint.sh), exit 1 "rejecting connections" (starting, recovering) is an
 * answer (PostgreSQL docs, pg_isready "Exit Status"). coreutils' timeout bounds it
 * whatever libpq does, so the count is always written. Never killed before its first
 * answer: a first start runs initdb, and a database killed then would be left half made.
 */
export function postgresProbe(service: string, user: string, db: string, timeoutS: number = HUNG_PROBE.timeoutS): ShellProbe {
  return {
    what: `${service} (pg_isready)`,
    command: `timeout -s KILL ${timeoutS + 1} pg_isready -q -h 127.0.0.1 -U ${user} -d ${db} -t ${timeoutS}`,
    notReadyExit: 1,
    graceS: null,
  };
}
