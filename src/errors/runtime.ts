import type { ErrorTable } from './types.js';

/** Errors of the runtime area (install directory, supervisor, docker). Codes start with ERR_RUNTIME_. */
export const runtimeErrors = {
  ERR_RUNTIME_NOT_INSTALLED: {
    message: 'No installation in {dir}',
    status: 500,
    exit: 3,
    hint: 'Run `hospital-api install --dir {dir}` first, or pass the --dir of an existing installation.',
  },
  ERR_RUNTIME_PORT_TAKEN: {
    message: 'Port {port} ({host}) needed by the {component} component is already in use by another process',
    status: 500,
    exit: 3,
    hint: 'Stop whatever listens on port {port} (e.g. `ss -ltnp "sport = :{port}"`), or reinstall with another port.',
  },
  ERR_RUNTIME_NOT_RUNNING: {
    message: 'The native stack in {dir} is not running',
    status: 500,
    exit: 3,
    hint: 'Start it with `hospital-api up --dir {dir}`.',
  },
  ERR_RUNTIME_START_FAILED: {
    message: 'The {component} component did not start: {detail}',
    status: 500,
    exit: 1,
    hint: 'Read its log: `hospital-api logs {component} --dir {dir}`.',
  },
  ERR_RUNTIME_TIMEOUT: {
    message: 'Timed out after {seconds}s waiting for {what}',
    status: 504,
    exit: 1,
    hint: 'Check `hospital-api status --dir {dir}` and the logs in {dir}/logs/.',
  },
  ERR_RUNTIME_UNKNOWN_COMPONENT: {
    message: 'Unknown component "{component}"',
    status: 400,
    exit: 2,
    hint: 'Components: {known}.',
  },
  ERR_RUNTIME_STOP_FAILED: {
    message: 'Could not stop {what}: {detail}',
    status: 500,
    exit: 1,
    hint: 'Find the process with `ss -ltnp` and stop it by its pid.',
  },
  ERR_RUNTIME_ADMIN_UNREACHABLE: {
    message: 'The native gateway admin API at {url} does not answer: {detail}',
    status: 502,
    exit: 3,
    hint: 'Start the stack with `hospital-api up --dir {dir}`.',
  },
  ERR_RUNTIME_DEMO_REFUSED: {
    message: 'The installation in {dir} is not a demo installation; the demo never touches it',
    status: 400,
    exit: 2,
    hint: 'Run the demo with another --dir (or HOSPITAL_API_DIR).',
  },
  ERR_RUNTIME_DEMO_STEP: {
    message: 'Demo step "{step}" failed: {detail}',
    status: 500,
    exit: 1,
    hint: 'Read the output above; `hospital-api down --dir {dir}` stops what was started.',
  },
} satisfies ErrorTable;
