import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api verify`: run the acceptance checks and write a signed test record */
export function register(program: Command): void {
  program
    .command('verify')
    .description('run the acceptance checks and write a signed test record')
    .action(
      action('verify', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'verify is not implemented yet' });
      }),
    );
}
