import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api demo`: install, start and verify the native stack with demo data (npm start) */
export function register(program: Command): void {
  program
    .command('demo')
    .description('install, start and verify the native stack with demo data (npm start)')
    .action(
      action('demo', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'demo is not implemented yet' });
      }),
    );
}
