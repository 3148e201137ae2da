import type { ErrorTable } from './types.js';

/** Errors that belong to no single component. */
export const coreErrors = {
  ERR_INTERNAL: {
    message: 'Internal error: {detail}',
    status: 500,
    exit: 70,
    hint: 'This is a bug in hospital-api; please report it with the command you ran.',
  },
  ERR_USAGE: {
    message: '{detail}',
    status: 400,
    exit: 2,
    hint: 'Run the command with --help to see its options.',
  },
  ERR_CONFIG_MISSING: {
    message: 'Missing required setting {name}',
    status: 500,
    exit: 3,
    hint: 'Set {name} in the environment or in the .env file of the working directory.',
  },
  ERR_CONFIG_INVALID: {
    message: 'Invalid setting {name}: {detail}',
    status: 500,
    exit: 3,
    hint: 'Correct {name} in the environment or in the .env file of the working directory.',
  },
  ERR_FILE_READ: {
    message: 'Cannot read {path}: {detail}',
    status: 500,
    exit: 3,
  },
  ERR_FILE_WRITE: {
    message: 'Cannot write {path}: {detail}',
    status: 500,
    exit: 1,
  },
  ERR_TLS_MATERIAL: {
    message: 'Invalid TLS material in {path}: {detail}',
    status: 500,
    exit: 3,
    hint: 'Provide PEM files: a CA certificate, a certificate chained to it and its private key.',
  },
  ERR_PORT_IN_USE: {
    message: 'Port {port} on {host} is already in use{detail}',
    status: 500,
    exit: 3,
    hint: 'Stop whatever listens there, or choose another port.',
  },
} satisfies ErrorTable;
