import type { ErrorTable } from './types.js';

/**
 * Errors of the fhir-data area ($everything, `fhir generate`, `fhir load`).
 * Codes start with ERR_FHIR_ and are unique across all tables.
 */
export const fhirDataErrors = {
  ERR_FHIR_EVERYTHING_BAD_PARAM: {
    message: 'Invalid $everything parameter {name}: {detail}',
    status: 400,
    exit: 2,
    hint: 'start/end are FHIR dates, _since an instant, _count a positive integer, _type a comma list of resource types.',
  },
  ERR_FHIR_EVERYTHING_BAD_CURSOR: {
    message: 'Invalid or foreign $everything page cursor',
    status: 400,
    exit: 2,
    hint: 'Follow the next link exactly as the server returned it, or start again without _cursor.',
  },
  ERR_FHIR_GENERATE_BAD_OPTION: {
    message: 'Invalid generate option {name}: {detail}',
    status: 400,
    exit: 2,
    hint: 'Example: hospital-api fhir generate --patients 20 --seed demo --sizes 10-2000 --out ./data',
  },
  ERR_FHIR_LOAD_BAD_FILE: {
    message: 'Cannot load {path}: {detail}',
    status: 400,
    exit: 2,
    hint: 'Give transaction or batch Bundles (.json) or NDJSON files with one resource per line.',
  },
  ERR_FHIR_LOAD_BAD_URL: {
    message: 'Invalid FHIR base URL {url}: {detail}',
    status: 400,
    exit: 2,
    hint: 'Use an http(s) base such as http://127.0.0.1:8080/fhir.',
  },
  ERR_FHIR_LOAD_UNAUTHORIZED: {
    message: 'FHIR server at {url} refused the load with HTTP 401: {detail}',
    status: 502,
    exit: 2,
    hint: "On the docker runtime the FHIR port needs the installation's door token: give --dir <install dir> (and no --url, or the installation's own FHIR address) so the load reads it from <install dir>/secrets/fhir-door-token.",
  },
  ERR_FHIR_LOAD_UNREACHABLE: {
    message: 'FHIR server at {url} is unreachable: {detail}',
    status: 502,
    exit: 3,
    hint: 'Start it with `hospital-api fhir` (or `hospital-api up`) and check --url. Rerun the same load to resume.',
  },
  ERR_FHIR_LOAD_REJECTED: {
    message: 'FHIR server rejected {unit} with HTTP {status}: {detail}',
    status: 502,
    exit: 1,
    hint: 'Fix the data named above; completed bundles are recorded in the state file, so rerunning resumes.',
  },
  ERR_FHIR_LOAD_NEEDS_BULK: {
    message: 'FHIR server refused {unit}: it references a resource the server does not hold ({detail})',
    status: 502,
    exit: 1,
    hint: 'The server enforces referential integrity. Load the referenced resources first, or restart it for this load with `hospital-api fhir --no-referential-integrity` (then restart it without the flag). Rerunning resumes.',
  },
  ERR_FHIR_LOAD_STATE: {
    message: 'Unusable load state file {path}: {detail}',
    status: 400,
    exit: 2,
    hint: 'Delete the state file to start over (loading again is idempotent when the data carries identifiers).',
  },
} satisfies ErrorTable;
