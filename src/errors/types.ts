/**
 * Shapes shared by every error table. One table per area (core, api, gateway,
 * fhir, install, runtime); `registry.ts` merges them into the single registry.
 * Codes are stable: a retired code is never reused for another meaning.
 */
export interface ErrorDefinition {
  /** Human message; `{name}` placeholders are filled from the error's params. */
  message: string;
  /** HTTP status when the error reaches an HTTP surface. */
  status: number;
  /** CLI exit code: 1 ran and failed, 2 usage, 3 environment not ready, 70 internal. */
  exit: 1 | 2 | 3 | 70;
  /** What the user can do about it. */
  hint?: string;
}

export type ErrorTable = Record<string, ErrorDefinition>;
