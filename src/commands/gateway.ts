import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api gateway`: run the native Kong-compatible gateway */
export function register(program: Command): void {
  program
    .command('gateway')
    .description('run the native Kong-compatible gateway')
    .action(
      action('gateway', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'gateway is not implemented yet' });
      }),
    );
}
