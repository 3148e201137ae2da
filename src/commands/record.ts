import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api record`: check the signature of a test record */
export function register(program: Command): void {
  program
    .command('record')
    .description('check the signature of a test record')
    .action(
      action('record', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'record is not implemented yet' });
      }),
    );
}
