import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { errorTables, registry } from '../../src/errors/registry.js';
import { HospitalApiError, toHospitalApiError } from '../../src/errors/index.js';
import { renderErrorsDoc } from '../../scripts/errors-doc.js';

describe('error registry', () => {
  it('has unique, well-formed codes across all area tables', () => {
    const seen = new Map<string, string>();
    for (const [area, table] of Object.entries(errorTables)) {
      for (const code of Object.keys(table)) {
        expect(code).toMatch(/^ERR_[A-Z0-9]+(_[A-Z0-9]+)*$/);
        expect(seen.has(code), `${code} defined in ${seen.get(code)} and ${area}`).toBe(false);
        seen.set(code, area);
      }
    }
    expect(Object.keys(registry).length).toBe(seen.size);
  });

  it('gives every code a valid status and exit code', () => {
    for (const [code, def] of Object.entries(registry)) {
      expect(def.status, code).toBeGreaterThanOrEqual(400);
      expect(def.status, code).toBeLessThan(600);
      expect([1, 2, 3, 70], code).toContain(def.exit);
      expect(def.message.length, code).toBeGreaterThan(0);
    }
  });

  it('is documented: docs/errors.md matches the registry (run `npm run docs:errors`)', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    expect(doc).toBe(renderErrorsDoc());
  });

  it('fills message and hint templates and wraps unknown errors as internal', () => {
    const err = new HospitalApiError('ERR_CONFIG_MISSING', { name: 'FHIR_API_KEY' });
    expect(err.message).toBe('Missing required setting FHIR_API_KEY');
    expect(err.hint).toContain('FHIR_API_KEY');
    expect(err.exit).toBe(3);
    const wrapped = toHospitalApiError(new Error('boom'));
    expect(wrapped.code).toBe('ERR_INTERNAL');
    expect(wrapped.exit).toBe(70);
    expect(toHospitalApiError(err)).toBe(err);
  });
});
