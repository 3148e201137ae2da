/**
 * Which failure a docker or Compose command's error output names, so the
 * error a hospital sees says what to do (issue 27: every docker failure had
 * the same "check that the engine runs" hint, also a registry that could not
 * be reached). The phrases are those the Docker CLI and engine print (moby's
 * client: "Cannot connect to the Docker daemon … Is the docker daemon
 * running?"; the distribution client: "pull access denied", "manifest
 * unknown"; Go's resolver: "no such host"; the port allocator: "port is
 * already allocated"). Plain substring tests: no pattern to backtrack on.
 */
import type { ErrorCode } from '../../errors/index.js';

const KINDS: ReadonlyArray<readonly [ErrorCode, readonly string[]]> = [
  ['ERR_INSTALL_DOCKER_ENGINE_DOWN', ['cannot connect to the docker daemon', 'is the docker daemon running', 'permission denied while trying to connect to the docker daemon', 'error during connect']],
  ['ERR_INSTALL_DOCKER_PORT_TAKEN', ['port is already allocated', 'address already in use']],
  ['ERR_INSTALL_DOCKER_IMAGE_REFUSED', ['pull access denied', 'manifest unknown', 'requested access to the resource is denied', 'repository does not exist', 'unauthorized: ', 'not found: manifest']],
  ['ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE', ['no such host', 'i/o timeout', 'tls handshake timeout', 'network is unreachable', 'temporary failure in name resolution', 'client.timeout exceeded', 'dial tcp']],
];

/** The error code for a failed docker command's stderr: a specific one when it names its cause, else ERR_INSTALL_DOCKER. */
export function dockerFailureCode(stderr: string): ErrorCode {
  const text = stderr.toLowerCase();
  for (const [code, phrases] of KINDS) if (phrases.some((p) => text.includes(p))) return code;
  return 'ERR_INSTALL_DOCKER';
}
