import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api logs`: show the log of a component */
export function register(program: Command): void {
  program
    .command('logs')
    .description('show the log of a component')
    .action(
      action('logs', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'logs is not implemented yet' });
      }),
    );
}
