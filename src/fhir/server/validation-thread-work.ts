/**
 * What the validation thread runs (validation-thread.ts): the R4 validation of a transaction Bundle's
 * entries, from the request's bytes, on a core other than the one that writes. The thread parses the
 * bytes itself (JSON.parse gives the value the server's own parse gives: json-body.ts), so no parsed
 * object crosses threads, and answers with the first invalid entry's findings.
 */
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { loadStructureDefinitions, validationIssues } from '../validation/validate.js';

export interface ValidationJob {
  id: number;
  /** The transaction Bundle's request body, as received. */
  body: Uint8Array;
  /** The entries to validate, ascending. */
  indices: number[];
}

export interface ValidationDone {
  id: number;
  /** The first entry of `indices` with findings, and its findings; null when every one is valid. */
  invalid: { index: number; issues: OperationOutcomeIssue[] } | null;
}

export function openThread(): void {
  loadStructureDefinitions();
}

export function runJob(job: ValidationJob): ValidationDone {
  const bundle = JSON.parse(Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength).toString('utf8')) as {
    entry?: Array<{ resource?: unknown } | null>;
  };
  for (const index of job.indices) {
    // inside a transaction conditional references are accepted (the transaction resolves them), as on the main thread
    const issues = validationIssues(bundle.entry?.[index]?.resource, { conditionalReferences: true });
    if (issues.length > 0) return { id: job.id, invalid: { index, issues } };
  }
  return { id: job.id, invalid: null };
}
