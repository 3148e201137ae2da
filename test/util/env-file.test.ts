/**
 * hospital-api.env as people read it: a value that needs no quoting (an API key, a URL, a path) is
 * written bare, so `grep FHIR_API_KEY` shows the key without quotes to paste along; one that does is
 * still quoted; files written quoted by older versions read the same.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { updateEnvValues } from '../../src/install/files.js';
import { formatEnvFile, readEnvFile } from '../../src/util/env-file.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

describe('env file values', () => {
  it('writes keys, URLs and paths bare', () => {
    const text = formatEnvFile({
      FHIR_API_KEY: 'Ab3_x-Yz09AbCdEfGhIjKlMnOpQrStUv',
      PADDED: 'QUJD+/9=',
      FHIR_BASE_URL: 'https://gw.example:8443/fhir-api-key-auth',
      FHIR_CA_FILE: '/srv/hospital-api/tls/ca.pem',
    });
    expect(text.split('\n')).toEqual([
      'FHIR_API_KEY=Ab3_x-Yz09AbCdEfGhIjKlMnOpQrStUv',
      'PADDED=QUJD+/9=',
      'FHIR_BASE_URL=https://gw.example:8443/fhir-api-key-auth',
      'FHIR_CA_FILE=/srv/hospital-api/tls/ca.pem',
      '',
    ]);
  });

  it('quotes what needs it: spaces, #, quotes, $, backslashes, an empty value', () => {
    const text = formatEnvFile({ A: 'a b', B: 'x#y', C: "it's", D: '$HOME', E: 'a\\b', F: '', G: '"x"', H: ' lead' });
    expect(text.split('\n').slice(0, -1)).toEqual(["A='a b'", "B='x#y'", 'C="it\'s"', "D='$HOME'", "E='a\\b'", "F=''", `G='"x"'`, "H=' lead'"]);
  });

  it('every printable character, alone, first, inside or last, reads back unchanged', () => {
    const values: Record<string, string> = {};
    for (let c = 0x20; c <= 0x7e; c++) {
      const ch = String.fromCharCode(c);
      for (const [i, v] of [ch, `${ch}ab`, `a${ch}b`, `ab${ch}`].entries()) values[`V${c}_${i}`] = v;
    }
    expect(parseEnv(formatEnvFile(values))).toEqual(values);
  });

  it('reads files written quoted by older versions, and rewrites a key bare when it is updated', () => {
    const path = join(tempDir(), 'hospital-api.env');
    writeFileSync(path, '# header\nFHIR_API_KEY="Ab3_x-Yz09AbCdEf"\nFHIR_CA_FILE=\'/srv/h/tls/ca.pem\'\nPLATFORM_API_URL=https://p.example/api\n', { mode: 0o600 });
    expect(readEnvFile(path)).toEqual({ FHIR_API_KEY: 'Ab3_x-Yz09AbCdEf', FHIR_CA_FILE: '/srv/h/tls/ca.pem', PLATFORM_API_URL: 'https://p.example/api' });
    updateEnvValues(path, { FHIR_API_KEY: 'NewKey0123456789abcdef' });
    const text = readFileSync(path, 'utf8');
    expect(text).toContain('\nFHIR_API_KEY=NewKey0123456789abcdef\n');
    expect(text.startsWith('# header\n')).toBe(true);
    expect(readEnvFile(path)).toEqual({ FHIR_API_KEY: 'NewKey0123456789abcdef', FHIR_CA_FILE: '/srv/h/tls/ca.pem', PLATFORM_API_URL: 'https://p.example/api' });
  });
});
