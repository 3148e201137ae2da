/**
 * The FHIR server's JSON body parser (issue 24): the value is the one JSON.parse gives, small or
 * large; what the server refuses (not JSON, too deep, a prototype key, escaped or not) is refused
 * at any place in the body; and a large body gives the event loop turns while it is parsed.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ARRAY_ITEMS, parseJsonBody, SLICED_BODY_BYTES } from '../../../src/fhir/server/json-body.js';
import { HospitalApiError } from '../../../src/errors/index.js';

const MAX = 20;

/** A filler member that pushes a body past SLICED_BODY_BYTES, so it takes the sliced path. */
const FILLER = `"filler":[${Array.from({ length: Math.ceil(SLICED_BODY_BYTES / 20) }, (_, i) => `{"n":${i}}`).join(',')}]`;

function bodies(text: string): Array<[string, Buffer]> {
  const open = text.trimStart().startsWith('{') && text.trim() !== '{}';
  const large = open ? text.replace('{', `{${FILLER},`) : text;
  return [
    ['small', Buffer.from(text)],
    ['large', Buffer.from(large)],
  ];
}

async function code(body: Buffer, max = MAX): Promise<string | undefined> {
  try {
    await parseJsonBody(body, max);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(HospitalApiError);
    return (err as HospitalApiError).code;
  }
}

/** A deterministic variety of JSON: nesting, unicode, escapes, numbers, empty containers. */
function sample(seed: number, depth = 0): unknown {
  let x = seed;
  const next = (): number => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
  const make = (d: number): unknown => {
    const r = next();
    if (d > 4 || r < 0.3) {
      const pick = Math.floor(next() * 8);
      return [null, true, false, -12.5e-3, 1.5, 'plain', 'é 漢字 \u2028 "quoted" \\ back\\slash\n\t', Math.floor(next() * 1e9)][pick];
    }
    if (r < 0.6) return Array.from({ length: Math.floor(next() * 4) }, () => make(d + 1));
    const o: Record<string, unknown> = {};
    for (let k = Math.floor(next() * 4); k > 0; k--) o[`k${Math.floor(next() * 6)}${k % 2 ? 'é' : ''}`] = make(d + 1);
    return o;
  };
  return make(depth);
}

describe('parseJsonBody', () => {
  it('gives what JSON.parse gives, small and large, for objects, arrays and scalars', async () => {
    const docs: string[] = [
      '{}', '[]', '"text"', '12.5', 'true', 'null', ' \n\t{ "a" : [ 1 , 2 ] , "b" : { } } \r\n',
      '{"a":1,"b":2,"a":3}', // a repeated key: the last value, in the first key's place
      '{"resourceType":"Bundle","type":"transaction","entry":[{"resource":{"resourceType":"Patient","name":[{"family":"Ünïcødé"}]}},{"request":{"url":"Patient?identifier=a%7Cb"}}]}',
      '{"text":"value named constructor","code":{"text":"__proto__"}}', // forbidden names as values are plain text
      JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ i, s: `${i}"\\` }))),
      ...Array.from({ length: 40 }, (_, i) => JSON.stringify({ resourceType: 'Basic', v: sample(i + 1) })),
    ];
    for (const doc of docs) {
      for (const [size, body] of bodies(doc)) {
        const expected = JSON.parse(body.toString('utf8')) as unknown;
        const value = await parseJsonBody(body, MAX);
        expect(value, `${size}: ${doc.slice(0, 60)}`).toStrictEqual(expected);
        expect(JSON.stringify(value)).toBe(JSON.stringify(expected)); // member order too
      }
    }
    expect(await parseJsonBody(Buffer.from(' \n '), MAX)).toBeUndefined();
  });

  it('refuses what JSON.parse refuses, naming where', async () => {
    const bad = [
      '{', '{"a":1', '{"a":1,}', '{"a" 1}', '{"a":1 "b":2}', '[1,]', '[1 2]', '{"entry":[{"a":1} {"b":2}]}',
      '{"entry":[{"a":1}}', '{"a":"b}', '{"a":tru}', '{"a":01}', "{'a':1}", '{"a":1}x', '{"a":[1,2}', '[{]}',
      '{"a":"\\x"}', '\uFEFF{"a":1}', 'nul',
    ];
    for (const doc of bad) {
      expect(() => JSON.parse(doc), doc).toThrow();
      for (const [size, body] of bodies(doc)) {
        const err = await parseJsonBody(body, MAX).then(() => undefined, (e: unknown) => e as HospitalApiError);
        expect(err?.code, `${size}: ${doc}`).toBe('ERR_FHIR_INVALID_REQUEST');
        expect(err?.message).toContain('body is not JSON');
      }
    }
  });

  it(`refuses nesting deeper than the limit anywhere, and takes the limit itself`, async () => {
    const nest = (levels: number): string => '{"a":'.repeat(levels - 1) + '[1]' + '}'.repeat(levels - 1);
    for (const [, body] of bodies(nest(MAX))) expect(await code(body)).toBeUndefined();
    for (const [, body] of bodies(nest(MAX + 1))) expect(await code(body)).toBe('ERR_FHIR_TOO_COMPLEX');
    // inside an element of a top-level member's array (the body is cut there), and a top-level array
    const inEntry = `{"entry":[{"x":1},${nest(MAX - 2)}]}`;
    for (const [, body] of bodies(inEntry)) expect(await code(body)).toBeUndefined();
    for (const [, body] of bodies(`{"entry":[{"x":1},${nest(MAX - 1)}]}`)) expect(await code(body)).toBe('ERR_FHIR_TOO_COMPLEX');
    expect(await code(Buffer.from(`[${nest(MAX - 1)}]`))).toBeUndefined();
    expect(await code(Buffer.from(`[${nest(MAX)}]`))).toBe('ERR_FHIR_TOO_COMPLEX');
    expect(await code(Buffer.from('['.repeat(MAX + 1) + ']'.repeat(MAX + 1)))).toBe('ERR_FHIR_TOO_COMPLEX');
  });

  it('refuses an array of more than MAX_ARRAY_ITEMS items anywhere but the top-level entry, and takes the limit itself (issue 45)', async () => {
    const items = (n: number) => `[${Array.from({ length: n }, () => '"G"').join(',')}]`;
    for (const [at, wrap] of [
      ['a top-level member', (a: string) => `{"given":${a}}`],
      ['a nested member', (a: string) => `{"name":[{"given":${a}}]}`],
      ['an entry', (a: string) => `{"entry":[{"resource":{"given":${a}}}]}`],
      ['the body', (a: string) => a],
    ] as Array<[string, (a: string) => string]>) {
      expect([at, await code(Buffer.from(wrap(items(MAX_ARRAY_ITEMS))))]).toEqual([at, undefined]);
      expect([at, await code(Buffer.from(wrap(items(MAX_ARRAY_ITEMS + 1))))]).toEqual([at, 'ERR_FHIR_TOO_COMPLEX']);
    }
    // a Bundle's own entry is bounded by the body limit only
    expect(await code(Buffer.from(`{"entry":${items(MAX_ARRAY_ITEMS + 1)}}`))).toBeUndefined();
    expect(await code(Buffer.from(`{"entry":[{"entry":${items(MAX_ARRAY_ITEMS + 1)}}]}`))).toBe('ERR_FHIR_TOO_COMPLEX');
  });

  it('refuses a prototype key at any depth, escaped or not, with its path', async () => {
    const cases: Array<[string, string]> = [
      ['{"__proto__":{"x":1}}', '$.__proto__'],
      ['{"resourceType":"Patient","constructor":1}', '$.constructor'],
      ['{"entry":[{"a":1},{"resource":{"contact":[{"prototype":{}}]}}]}', '$.entry[1].resource.contact[0].prototype'],
      ['{"entry":[{"resource":{"\\u005f_proto__":{"polluted":true}}}]}', '$.entry[0].resource.__proto__'],
      ['{"\\u0063onstructor":1}', '$.constructor'],
      ['[{"a":{"__proto__":1}}]', '$[0].a.__proto__'],
      ['{"meta":{"tag":[{"code":"x","__proto__":[]}]}}', '$.meta.tag[0].__proto__'],
    ];
    for (const [doc, path] of cases) {
      for (const [size, body] of bodies(doc)) {
        const err = await parseJsonBody(body, MAX).then(() => undefined, (e: unknown) => e as HospitalApiError);
        expect(err?.code, `${size}: ${doc}`).toBe('ERR_FHIR_FORBIDDEN_KEY');
        expect(err?.message, `${size}: ${doc}`).toContain(path);
      }
    }
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('gives the event loop turns while a large body is parsed, and none for a small one', async () => {
    const entry = Array.from({ length: 2000 }, (_, i) => ({ resource: { resourceType: 'Basic', id: `b${i}` } }));
    const large = Buffer.from(JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry }));
    expect(large.length).toBeGreaterThan(SLICED_BODY_BYTES);
    const order: string[] = [];
    let turns = 0;
    // a tick that always yields: a parse that never calls it would run as one block
    const everyPiece = (): Promise<void> => new Promise<void>((resolve) => setImmediate(() => (turns++, resolve())));
    setImmediate(() => order.push('other caller'));
    const value = (await parseJsonBody(large, MAX, everyPiece)) as { entry: unknown[] };
    order.push('parsed');
    expect(value.entry).toHaveLength(2000);
    expect(order).toEqual(['other caller', 'parsed']);
    expect(turns).toBeGreaterThanOrEqual(2000); // a turn is offered after every entry

    turns = 0;
    await parseJsonBody(Buffer.from(JSON.stringify({ resourceType: 'Bundle', entry: entry.slice(0, 3) })), MAX, everyPiece);
    expect(turns).toBe(0);
  });
});
