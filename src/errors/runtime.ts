import type { ErrorTable } from './types.js';

/** Errors of the runtime area (install directory, supervisor, docker). Codes start with ERR_RUNTIME_. */
export const runtimeErrors = {
  ERR_RUNTIME_NOT_INSTALLED: {
    message: 'No installation in {dir}',
    status: 500,
    exit: 3,
    hint: 'Run `hospital-api install --dir {dir}` first, or pass the --dir of an existing installation.',
  },
} satisfies ErrorTable;
