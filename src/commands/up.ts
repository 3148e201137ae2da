import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api up`: start the native stack */
export function register(program: Command): void {
  program
    .command('up')
    .description('start the native stack')
    .action(
      action('up', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'up is not implemented yet' });
      }),
    );
}
