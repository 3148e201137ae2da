import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api consumer`: create the hospital gateway consumer and its key */
export function register(program: Command): void {
  program
    .command('consumer')
    .description('create the hospital gateway consumer and its key')
    .action(
      action('consumer', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'consumer is not implemented yet' });
      }),
    );
}
