import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api install`: provision the gateway and write the install directory */
export function register(program: Command): void {
  program
    .command('install')
    .description('provision the gateway and write the install directory')
    .action(
      action('install', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'install is not implemented yet' });
      }),
    );
}
