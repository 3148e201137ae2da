/** The pure parts of $everything: care dates, parameters, cursors. */
import { describe, expect, it } from 'vitest';
import { careRange, inCareWindow } from '../../src/fhir/everything/care-date.js';
import { decodeCursor, encodeCursor } from '../../src/fhir/everything/cursor.js';
import { MAX_COUNT, pairsFromParameters, parseEverythingParams } from '../../src/fhir/everything/params.js';

const day = (s: string) => Date.parse(`${s}T00:00:00Z`);

describe('$everything care dates', () => {
  it('overlaps periods and dateTimes at their precision, keeps resources without a care date', () => {
    const enc = { resourceType: 'Encounter', period: { start: '2020-03-01T09:00:00Z', end: '2020-03-03T10:00:00Z' } };
    expect(inCareWindow(enc, day('2020-03-02'), day('2020-03-03'))).toBe(true);
    expect(inCareWindow(enc, day('2020-03-04'), undefined)).toBe(false);
    expect(inCareWindow(enc, undefined, day('2020-03-01'))).toBe(false);
    const open = { resourceType: 'Encounter', period: { start: '2020-03-01' } };
    expect(inCareWindow(open, day('2030-01-01'), undefined)).toBe(true);
    const obs = { resourceType: 'Observation', effectiveDateTime: '2021' };
    expect(careRange(obs)).toEqual([day('2021-01-01'), day('2022-01-01')]);
    expect(inCareWindow(obs, day('2021-12-31'), undefined)).toBe(true);
    expect(inCareWindow({ resourceType: 'Practitioner' }, day('2021-01-01'), day('2021-02-01'))).toBe(true);
    expect(inCareWindow({ resourceType: 'Condition', code: {} }, day('2021-01-01'), day('2021-02-01'))).toBe(true);
    expect(inCareWindow({ resourceType: 'Condition', recordedDate: '2019-05-05' }, day('2021-01-01'), undefined)).toBe(false);
  });
});

describe('$everything parameters', () => {
  it('parses from query pairs and Parameters bodies alike', () => {
    const p = parseEverythingParams(new URLSearchParams('_type=Observation,Encounter&_type=Observation&_count=99999&start=2020&end=2020-06&_since=2024-01-01T00:00:00%2B07:00&foo=1'));
    expect(p.types).toEqual(['Observation', 'Encounter']);
    expect(p.count).toBe(MAX_COUNT);
    expect(p.start).toBe(day('2020-01-01'));
    expect(p.end).toBe(day('2020-07-01'));
    expect(p.sinceIso).toBe('2023-12-31T17:00:00.000Z');
    expect(p.echo.map(([k]) => k)).not.toContain('foo');
    const body = pairsFromParameters({ resourceType: 'Parameters', parameter: [{ name: '_count', valueInteger: 5 }, { name: 'start', valueDate: '2021-01-01' }] });
    expect(parseEverythingParams([], body)).toMatchObject({ count: 5, start: day('2021-01-01') });
  });

  it.each([['_count', '0'], ['_count', '1.5'], ['_type', 'observation'], ['_since', '2024-01-01'], ['start', '2020-02-30x'], ['end', 'soon']])('refuses %s=%s', (name, value) => {
    expect(() => parseEverythingParams([[name, value]])).toThrow(expect.objectContaining({ code: 'ERR_FHIR_EVERYTHING_BAD_PARAM' }));
  });

  it('refuses start after end and a body that is not Parameters', () => {
    expect(() => parseEverythingParams([['start', '2022'], ['end', '2021']])).toThrow(/start is after end/);
    expect(() => pairsFromParameters({ resourceType: 'Patient' })).toThrow(expect.objectContaining({ code: 'ERR_FHIR_EVERYTHING_BAD_PARAM' }));
  });
});

describe('$everything cursors', () => {
  it('round-trips, and refuses tampering or another query', () => {
    const c = encodeCursor({ phase: 'r', key: 'Practitioner/x' }, 'fp1');
    expect(decodeCursor(c, 'fp1')).toEqual({ phase: 'r', key: 'Practitioner/x' });
    expect(() => decodeCursor(c, 'fp2')).toThrow(expect.objectContaining({ code: 'ERR_FHIR_EVERYTHING_BAD_CURSOR' }));
    expect(() => decodeCursor(`${c.slice(0, -2)}zz`, 'fp1')).toThrow(expect.objectContaining({ code: 'ERR_FHIR_EVERYTHING_BAD_CURSOR' }));
    expect(() => decodeCursor(Buffer.from('[1,"x","k","fp1"]').toString('base64url'), 'fp1')).toThrow(expect.objectContaining({ code: 'ERR_FHIR_EVERYTHING_BAD_CURSOR' }));
  });
});
