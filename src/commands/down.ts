import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api down`: stop the native stack */
export function register(program: Command): void {
  program
    .command('down')
    .description('stop the native stack')
    .action(
      action('down', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'down is not implemented yet' });
      }),
    );
}
