import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';
import { action } from './action.js';

/** `hospital-api fhir`: run the native FHIR R4 server */
export function register(program: Command): void {
  program
    .command('fhir')
    .description('run the native FHIR R4 server')
    .action(
      action('fhir', async () => {
        throw new HospitalApiError('ERR_USAGE', { detail: 'fhir is not implemented yet' });
      }),
    );
}
