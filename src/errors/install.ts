import type { ErrorTable } from './types.js';

/** Errors of the install area (install, consumer, verify, record, docker runtime). Codes start with ERR_INSTALL_. */
export const installErrors = {
  ERR_INSTALL_TLS_OPTIONS: {
    message: 'TLS options: {detail}',
    status: 400,
    exit: 2,
    hint: 'Pass either --generate-ca, or all three of --ca, --cert and --key.',
  },
  ERR_INSTALL_TLS_MISMATCH: {
    message: 'The TLS material does not fit together: {detail}',
    status: 400,
    exit: 3,
    hint: 'The certificate must be issued by the CA in --ca and --key must be its private key.',
  },
  ERR_INSTALL_TLS_NAME_MISSING: {
    message: '{cert} does not name {missing}, which the {runtime} runtime needs: {why}',
    status: 400,
    exit: 3,
    hint: 'Have the certificate reissued by your CA with subjectAltName DNS:{missing} as well as your --host names, or install with --generate-ca.',
  },
  ERR_INSTALL_BAD_OPTION: {
    message: 'Invalid option {name}: {detail}',
    status: 400,
    exit: 2,
  },
  ERR_INSTALL_RUNTIME_CONFLICT: {
    message: 'The installation in {dir} uses the {existing} runtime, not {requested}',
    status: 400,
    exit: 2,
    hint: 'Use another --dir, or rerun without --runtime.',
  },
  ERR_INSTALL_ADMIN: {
    message: 'Gateway admin API: {method} {path} answered {status}: {detail}',
    status: 502,
    exit: 1,
    hint: 'Check that the gateway runs (`hospital-api status{dirFlag}`), then rerun: provisioning is idempotent.',
  },
  ERR_INSTALL_ADMIN_UNREACHABLE: {
    message: 'Gateway admin API unreachable: {detail}',
    status: 502,
    exit: 3,
    hint: 'Start the stack (`hospital-api up{dirFlag}`) and rerun.',
  },
  ERR_INSTALL_CONSUMER_EXISTS: {
    message: 'Consumer {username} already has a key-auth credential',
    status: 409,
    exit: 1,
    hint: 'The key was printed once, when it was created. To replace it, rotate it: `hospital-api consumer rotate-key {username} --dir {dir}` (add --write-env to switch the Hospital API to the new key).',
  },
  ERR_INSTALL_KEY_TAKEN: {
    message: 'The key given with --key is already a credential of another consumer',
    status: 409,
    exit: 1,
    hint: 'Omit --key to have a new key generated.',
  },
  ERR_INSTALL_DOCKER: {
    message: 'docker {command} failed: {detail}',
    status: 500,
    exit: 3,
    hint: 'Check that the Docker engine runs (`docker info`) and that Compose works (`docker compose version`, or `docker-compose version` 1.29+).',
  },
  ERR_INSTALL_DOCKER_ENGINE_DOWN: {
    message: 'docker {command} failed: the Docker engine does not answer ({detail})',
    status: 503,
    exit: 3,
    hint: 'Start the engine (`systemctl start docker`), and run as root or as a member of the docker group; `docker info` must answer.',
  },
  ERR_INSTALL_DOCKER_REGISTRY_UNREACHABLE: {
    message: 'docker {command} failed: the engine cannot reach the image\'s registry ({detail})',
    status: 502,
    exit: 3,
    hint: 'Load the image on this host (`docker load -i <file>`), or name one the engine can reach with --kong-image, --hapi-image, --postgres-image or --api-image. Nothing was written.',
  },
  ERR_INSTALL_DOCKER_IMAGE_REFUSED: {
    message: 'docker {command} failed: the registry refused the image ({detail})',
    status: 502,
    exit: 3,
    hint: 'Check the image name and tag (--kong-image, --hapi-image, --postgres-image, --api-image), and `docker login <registry>` if it is private. Nothing was written.',
  },
  ERR_INSTALL_DOCKER_PORT_TAKEN: {
    message: 'docker {command} failed: a port to publish is taken ({detail})',
    status: 409,
    exit: 3,
    hint: 'Another program or container listens there: stop it, or install again with other ports (--api-port, --gateway-https-port, --fhir-port).',
  },
  ERR_INSTALL_DOCKER_NO_COMPOSE: {
    message: 'The docker runtime needs Compose: neither `docker compose` (v2) nor `docker-compose` 1.29 or later works here',
    status: 500,
    exit: 3,
    hint: 'Install the Compose v2 plugin (docker-compose-plugin) or Debian/Ubuntu\'s docker-compose package, or install with --runtime native.',
  },
  ERR_INSTALL_DOCKER_STALE_VOLUMES: {
    message: 'The database volumes {volumes} were made with other passwords than the ones in this installation (lost secrets?)',
    status: 409,
    exit: 3,
    hint: 'Restore the old <install dir>/secrets, or delete those databases (ALL their data) with `docker compose down --volumes` (or `docker-compose down --volumes`) run in {dir}, then install again.',
  },
  ERR_INSTALL_HEALTH_TIMEOUT: {
    message: 'Timed out after {seconds}s waiting for {what}',
    status: 504,
    exit: 3,
    hint: 'See the component logs: `hospital-api logs <component>{dirFlag}`.',
  },
  ERR_INSTALL_NO_SIGNER: {
    message: 'No record-signing certificate in {dir}',
    status: 500,
    exit: 3,
    hint: 'Rerun `hospital-api install{dirFlag}` for this directory.',
  },
  ERR_INSTALL_RECORD_INVALID: {
    message: 'Record {path} does not verify: {detail}',
    status: 400,
    exit: 1,
    hint: 'The record was changed after signing, signed under another CA (pass --ca), or signed by a certificate that may not sign records (the detail says which; the audit seal never may).',
  },
  ERR_INSTALL_RECORD_LOCKED: {
    message: 'Another verify is writing a record in this folder ({path} is held)',
    status: 409,
    exit: 3,
    hint: 'Wait for it to finish and run verify again; a lock left by a run that died is taken over after two minutes.',
  },
  ERR_INSTALL_RECORD_CHAIN_BROKEN: {
    message: 'The records in {path} do not form one unbroken chain: {detail}',
    status: 400,
    exit: 1,
    hint: 'Each problem names a record: one removed, altered, reordered or brought in from elsewhere (see docs/operations.md, "Checking a period").',
  },
  ERR_INSTALL_RECORD_NO_CA: {
    message: 'No CA found beside {path}: {beside} does not exist',
    status: 400,
    exit: 2,
    hint: 'Name the CA that signed it: --ca <file> (its certificate), or --dir <install dir> (the install it came from).',
  },
  ERR_INSTALL_RECORD_FORMAT: {
    message: 'File {path} is not an acceptance record: {detail}',
    status: 400,
    exit: 2,
    hint: 'Pass the acceptance-<time>.json files verify wrote in <install dir>/reports/.',
  },
} satisfies ErrorTable;
