import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api status`: show the state of the native stack */
export function register(program: Command): void {
  program
    .command('status')
    .description('show the state of the native stack')
    .action(
      action('status', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'status is not implemented yet' });
      }),
    );
}
