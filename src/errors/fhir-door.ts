import type { ErrorTable } from './types.js';

/**
 * Errors of the FHIR door (src/fhir-door/): the docker runtime's forwarder in front of HAPI.
 * Returned as an OperationOutcome with the status below (http://hl7.org/fhir/R4/operationoutcome.html).
 */
export const fhirDoorErrors = {
  ERR_FHIR_DOOR_UNAUTHORIZED: {
    message: 'This FHIR port answers GET /fhir/metadata to anyone; everything else needs the installation\'s FHIR door token ({detail})',
    status: 401,
    exit: 1,
    hint: 'Use `hospital-api fhir load --dir <install dir>`, which sends the token from <install dir>/secrets/fhir-door-token; other clients send it as `Authorization: Bearer <token>`.',
  },
  ERR_FHIR_DOOR_BAD_TARGET: {
    message: 'Request target refused: {detail}',
    status: 400,
    exit: 1,
    hint: 'Send an origin-form target under /fhir (for example GET /fhir/Patient), with no "." or ".." segment.',
  },
  ERR_FHIR_DOOR_UPSTREAM: {
    message: 'The FHIR server behind the door did not answer: {detail}',
    status: 502,
    exit: 3,
    hint: 'Check the hapi container (`hospital-api status{dirFlag}`, `hospital-api logs fhir{dirFlag}`).',
  },
  ERR_FHIR_DOOR_TOKEN: {
    message: 'The FHIR door token {path} is unusable: {detail}',
    status: 500,
    exit: 3,
    hint: 'Run `hospital-api up{dirFlag}`, which creates the token when it is missing and copies it to the door.',
  },
} as const satisfies ErrorTable;
