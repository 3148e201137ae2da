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
 * argv: method, URL. The JSON body (if any) comes on stdin. Prints the status on
 * the first line, then the body. HTTP::Tiny answers status 599 for a connection
 * error, with the reason as content: exit 3 then.
 */
export const PERL_ADMIN_CALL = [
  'my ($method, $url) = @ARGV;',
  'binmode STDIN; binmode STDOUT;',
  'my $body = do { local $/; <STDIN> };',
  'my %opt = (defined $body && length $body) ? (content => $body, headers => { "Content-Type" => "application/json" }) : ();',
  'my $res = HTTP::Tiny->new(timeout => 30)->request($method, $url, \\%opt);',
  'print $res->{status}, "\\n", (defined $res->{content} ? $res->{content} : "");',
  'exit($res->{status} == 599 ? 3 : 0);',
].join(' ');

/** Splits the helper's output: the status on the first line, then the body. */
export function parseAdminOutput(stdout: string): AdminResponse {
  const cut = stdout.indexOf('\n');
  const status = Number((cut >= 0 ? stdout.slice(0, cut) : stdout).trim());
  const text = cut >= 0 ? stdout.slice(cut + 1) : '';
  let body: unknown = null;
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: Number.isInteger(status) ? status : 0, body };
}

/** @throws ERR_INSTALL_ADMIN_UNREACHABLE */
export async function adminCall(cli: DockerCli, container: string, method: string, path: string, body?: unknown): Promise<AdminResponse> {
  const res = await cli.run(['exec', '-i', container, 'perl', '-MHTTP::Tiny', '-e', PERL_ADMIN_CALL, method, `${ADMIN_URL}${path}`], {
    allowFail: true,
    input: body === undefined ? '' : JSON.stringify(body),
    timeoutMs: 60_000,
  });
  if (res.exitCode !== 0) {
    const detail = res.exitCode === 3 ? parseAdminOutput(res.stdout).body : res.stderr.trim();
    throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: String(detail || `exit code ${res.exitCode}`).slice(0, 300) });
  }
  return parseAdminOutput(res.stdout);
}
