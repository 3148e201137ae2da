import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api serve`: run the Hospital API (POST /api/patients, GET /api/health-check) */
export function register(program: Command): void {
  program
    .command('serve')
    .description('run the Hospital API (POST /api/patients, GET /api/health-check)')
    .action(
      action('serve', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'serve is not implemented yet' });
      }),
    );
}
