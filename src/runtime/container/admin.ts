/**
 * One call to Kong's admin API, which listens on 127.0.0.1:8001 inside the kong
 * container only (spec §1, §4.4). The official image has no curl: Kong/docker-kong
 * ubuntu/Dockerfile installs it to fetch kong.deb and then `apt-get purge -y curl`.
 * It does have perl, a hard dependency of kong.deb (Kong/kong
 * build/package/nfpm.yaml), and Debian/Ubuntu perl ships HTTP::Tiny. So the call
 * runs `perl -MHTTP::Tiny` through `docker exec`: nothing is published, no tool
 * is added to the image, no helper container is started per call.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { AdminResponse } from '../types.js';
import type { DockerCli } from './compose.js';

export const ADMIN_URL = 'http://127.0.0.1:8001';

/**
 * argv: method, URL, the JSON body's length in bytes (0: none). The body comes on
 * stdin, and exactly that many bytes are read: the call never waits for the end of
 * its input. Docker 20.10 (Debian 12's docker.io) can lose the close of an exec's
 * stdin, and a reader waiting for EOF then waits forever (moby/moby#37870, an empty
 * stdin; moby/moby 36935bd, "Closing stdin of a container or exec ... has been
 * somewhat broken ever since ... Docker v17.11"). The likely cause of a docker-tier
 * verify whose gateway check timed out after 60 s, 1 call in some thousands.
 * Prints the status on the first line, then the body.
 * HTTP::Tiny answers status 599 for a connection error, with the reason as
 * content: exit 3 then. A body cut short: exit 4.
 */
export const PERL_ADMIN_CALL = [
  'my ($method, $url, $length) = @ARGV;',
  'binmode STDIN; binmode STDOUT;',
  'my $body = "";',
  'while (length($body) < $length) { my $n = read(STDIN, $body, $length - length($body), length($body)); if (!$n) { print STDERR "admin call: body cut short\\n"; exit 4; } }',
  'my %opt = $length ? (content => $body, headers => { "Content-Type" => "application/json" }) : ();',
  'my $res = HTTP::Tiny->new(timeout => 30)->request($method, $url, \\%opt);',
  'print $res->{status}, "\\n", (defined $res->{content} ? $res->{content} : "");',
  'exit($res->{status} == 599 ? 3 : 0);',
].join(' ');

/** Splits the helper's output: the status on the first line, then the body. */
export function parseAdminOutput(stdout: string): AdminResponse {
  const cut = stdout.indexOf('\n');
  const status = Number((cut >= 0 ? stdout.slice(0, cut) : stdout).trim());
  const text = cut >= 0 ? stdout.slice(cut + 1) : '';
  return { status: Number.isInteger(status) ? status : 0, body: adminBody(text) };
}

/** An admin API answer's body: its JSON, the text itself when it is not JSON (an error page), null when empty. */
export function adminBody(text: string): unknown {
  if (!text.trim()) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The `docker` arguments and stdin of one admin call. A call without a body
 * attaches no stdin at all (no `-i`); one with a body passes it on stdin, never
 * in the arguments (a key or password in argv is readable by every local user
 * through /proc), with its length as the last argument.
 */
export function adminExecArgs(container: string, method: string, path: string, body?: unknown): { args: string[]; input?: string } {
  const script = ['perl', '-MHTTP::Tiny', '-e', PERL_ADMIN_CALL, method, `${ADMIN_URL}${path}`];
  if (body === undefined) return { args: ['exec', container, ...script, '0'] };
  const input = JSON.stringify(body);
  return { args: ['exec', '-i', container, ...script, String(Buffer.byteLength(input))], input };
}

/** @throws ERR_INSTALL_ADMIN_UNREACHABLE */
export async function adminCall(cli: DockerCli, container: string, method: string, path: string, body?: unknown): Promise<AdminResponse> {
  const { args, input } = adminExecArgs(container, method, path, body);
  const res = await cli.run(args, { allowFail: true, ...(input === undefined ? {} : { input }), timeoutMs: 60_000 });
  if (res.exitCode !== 0) {
    const detail = res.exitCode === 3 ? parseAdminOutput(res.stdout).body : res.stderr.trim();
    throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: String(detail || `exit code ${res.exitCode}`).slice(0, 300) });
  }
  return parseAdminOutput(res.stdout);
}
