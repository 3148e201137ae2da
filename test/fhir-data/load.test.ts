/**
 * `fhir load` against the real server: a generated data set loads completely,
 * loading it again creates nothing (conditional creates), and a load stopped
 * by a rejected Bundle resumes from its state file without re-sending.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGenerate } from '../../src/fhir-data/generate/command.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { runCli } from '../helpers/cli.js';
import { installConfig } from '../helpers/install-config.js';
import { writeInstallConfig } from '../../src/install-dir/install-config.js';
import { load, runLoad } from '../../src/fhir-data/load/command.js';
import { createIo } from '../../src/output/io.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { fhirJson, startFhir, type RunningFhir } from '../helpers/fhir-server.js';

let fhir: RunningFhir;
const quietIo = () => {
  const out: string[] = [];
  const sink = (into?: string[]) => new Writable({ write(c, _e, cb) { into?.push(String(c)); cb(); } });
  return { io: createIo({ stdout: sink(out), stderr: sink() }), out };
};

beforeAll(async () => {
  fhir = await startFhir(tempDir('fhir-load-'));
});
afterAll(async () => {
  await fhir?.stop();
  removeTempDirs();
});

async function countOf(query: string): Promise<number> {
  let url: string | undefined = `${fhir.base}/${query}${query.includes('?') ? '&' : '?'}_count=1000`;
  let n = 0;
  while (url) {
    const { status, body } = await fhirJson(url);
    expect(status).toBe(200);
    n += (body.entry ?? []).filter((e: { search?: { mode?: string } }) => e.search?.mode !== 'include').length;
    url = body.link?.find((l: { relation: string }) => l.relation === 'next')?.url;
  }
  return n;
}

describe('fhir load', () => {
  it('loads generated Bundles, and loading them twice creates nothing new', async () => {
    const dir = tempDir();
    const { io } = quietIo();
    await runGenerate({ patients: 4, seed: 'load', sizes: '10,120,250,40', out: dir }, io);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { counts: Record<string, number>; patients: Array<{ careId: string; id: string; size: number }> };
    const total = Object.values(manifest.counts).reduce((a, b) => a + b, 0);
    const files = [join(dir, '00-shared.json'), join(dir, '01-patients.ndjson')];

    const first = await load({ files, url: fhir.base, concurrency: 3 }, io);
    expect(first.created).toBe(total);
    expect(existsSync(join(dir, '.fhir-load-state.json'))).toBe(false);
    const counts = { obs: await countOf('Observation'), patients: await countOf('Patient'), practitioners: await countOf('Practitioner') };
    expect(counts).toEqual({ obs: manifest.counts.Observation, patients: 4, practitioners: manifest.counts.Practitioner });

    const second = await load({ files, url: fhir.base, concurrency: 3 }, io);
    expect(second.created).toBe(0);
    expect(second.kept).toBe(first.created + first.kept);
    expect({ obs: await countOf('Observation'), patients: await countOf('Patient'), practitioners: await countOf('Practitioner') }).toEqual(counts);

    // the platform care id finds each patient, and $everything returns exactly its record plus the shared resources it uses
    const dataset = generateDataset({ patients: 4, seed: 'load', sizes: '10,120,250,40' });
    const sharedByKey = new Map(dataset.shared.map((r) => [`${r.resourceType}/${r.id}`, r]));
    const refsOf = (r: unknown) => [...JSON.stringify(r).matchAll(/"reference":"([^"]+)"/g)].map((m) => m[1] as string);
    for (const [i, p] of manifest.patients.entries()) {
      const { body } = await fhirJson(`${fhir.base}/Patient?identifier=${encodeURIComponent(`urn:hospital-api:platform-care-id|${p.careId}`)}`);
      expect(body.entry).toHaveLength(1);
      const gen = dataset.patients[i]!;
      const used = new Set<string>();
      const walk = (r: unknown) => {
        for (const k of refsOf(r)) {
          if (!sharedByKey.has(k) || used.has(k)) continue;
          used.add(k);
          walk(sharedByKey.get(k)); // Location → Organization is followed too
        }
      };
      for (const r of [gen.patient, ...gen.groups.flatMap((g) => g.resources)]) walk(r);
      const types: Record<string, number> = {};
      let url: string | undefined = `${fhir.base}/Patient/${body.entry[0].resource.id}/$everything?_count=97`;
      while (url) {
        const page: { entry?: Array<{ resource: { resourceType: string } }>; link: Array<{ relation: string; url: string }> } = (await fhirJson(url)).body;
        for (const e of page.entry ?? []) types[e.resource.resourceType] = (types[e.resource.resourceType] ?? 0) + 1;
        url = page.link.find((l) => l.relation === 'next')?.url;
      }
      expect(Object.values(types).reduce((a, b) => a + b, 0)).toBe(p.size + used.size);
      expect(types.Patient).toBe(1);
    }
  });

  it('runs as the real CLI: fhir generate then fhir load --url', async () => {
    const dir = tempDir();
    const gen = await runCli(['fhir', 'generate', '--patients', '2', '--seed', 'cli', '--sizes', '30', '--out', dir]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    expect(gen.stdout).toMatch(/Generated 2 patients, 114 resources/);
    const loaded = await runCli(['--json', 'fhir', 'load', join(dir, '00-shared.json'), join(dir, '01-patients.ndjson'), '--url', fhir.base]);
    expect(loaded.exitCode, String(loaded.stderr)).toBe(0);
    const doc = JSON.parse(String(loaded.stdout));
    expect(doc.ok).toBe(true);
    // another seed, so its shared resources are new too: 54 shared + 2 × 30
    expect(doc.result).toMatchObject({ created: 114, kept: 0, failed: 0, bundles: 3 });
  });

  it("without --url loads into the installation's own FHIR server (install.json), and a --dir with no installation is refused", async () => {
    const site = tempDir('fhir-load-site-');
    const port = Number(new URL(fhir.base).port);
    writeInstallConfig(site, installConfig({ runtime: 'native', hosts: ['127.0.0.1'], ports: { fhir: port } }));
    const data = tempDir();
    writeFileSync(join(data, 'org.ndjson'), JSON.stringify({ resourceType: 'Organization', id: 'from-site-default', name: 'Site default' }) + '\n');
    const loaded = await runCli(['--json', 'fhir', 'load', join(data, 'org.ndjson')], { env: { HOSPITAL_API_DIR: site } });
    expect(loaded.exitCode, String(loaded.stderr)).toBe(0);
    expect((await fhirJson(`${fhir.base}/Organization/from-site-default`)).body.name).toBe('Site default');

    const empty = tempDir();
    const refused = await runCli(['--json', 'fhir', 'load', '--dir', empty, join(data, 'org.ndjson')]);
    expect(refused.exitCode).toBe(2);
    expect(JSON.parse(String(refused.stdout)).error.code).toBe('ERR_USAGE');
  });

  it('loads NDJSON resources (PUT by id) and reports through runLoad', async () => {
    const dir = tempDir();
    const path = join(dir, 'r.ndjson');
    const lines = Array.from({ length: 150 }, (_, i) => JSON.stringify({ resourceType: 'Organization', id: `nd-org-${i}`, name: `Org ${i}` }));
    writeFileSync(path, lines.join('\n') + '\n');
    const { io, out } = quietIo();
    expect(await runLoad({ files: [path], url: fhir.base }, io)).toBe(0);
    expect(out.join('')).toMatch(/Loaded 2 bundles from 1 files/);
    const { body } = await fhirJson(`${fhir.base}/Organization/nd-org-149`);
    expect(body.name).toBe('Org 149');
  });

  it('stops at a rejected Bundle, keeps a state file, and resumes without re-sending what was done', async () => {
    const dir = tempDir();
    const path = join(dir, 'bundles.ndjson');
    const bundle = (i: number, valid = true) => ({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: `urn:uuid:00000000-0000-4000-8000-00000000000${i}`, resource: { resourceType: 'Practitioner', identifier: [{ system: 'urn:test:resume', value: `p${i}` }] }, request: { method: 'POST', url: 'Practitioner', ifNoneExist: `identifier=urn:test:resume|p${i}` } },
        ...(valid ? [] : [{ resource: { resourceType: 'Practitioner' }, request: { method: 'FROB', url: 'Practitioner' } }]),
      ],
    });
    const write = (badAt: number) => writeFileSync(path, [0, 1, 2, 3, 4].map((i) => JSON.stringify(bundle(i, i !== badAt))).join('\n') + '\n');
    write(2);
    const { io } = quietIo();
    await expect(load({ files: [path], url: fhir.base, concurrency: 1 }, io)).rejects.toMatchObject({ code: 'ERR_FHIR_LOAD_REJECTED' });
    const statePath = join(dir, '.fhir-load-state.json');
    expect(JSON.parse(readFileSync(statePath, 'utf8')).done).toEqual({ [path]: [0, 1] });
    expect(await countOf('Practitioner?identifier=urn:test:resume|')).toBe(2);

    write(-1); // the operator fixes the file and runs the same command again
    const resumed = await load({ files: [path], url: fhir.base, concurrency: 1 }, io);
    expect(resumed).toMatchObject({ skipped: 2, bundles: 3, created: 3, kept: 0 });
    expect(existsSync(statePath)).toBe(false);
    expect(await countOf('Practitioner?identifier=urn:test:resume|')).toBe(5);
  });

  it('refuses bad input with coded errors before sending anything', async () => {
    const dir = tempDir();
    const { io } = quietIo();
    await expect(load({ files: [join(dir, 'missing.json')], url: fhir.base }, io)).rejects.toMatchObject({ code: 'ERR_FILE_READ' });
    const notBundle = join(dir, 'x.json');
    writeFileSync(notBundle, JSON.stringify({ resourceType: 'Bundle', type: 'searchset', entry: [] }));
    await expect(load({ files: [notBundle], url: fhir.base }, io)).rejects.toMatchObject({ code: 'ERR_FHIR_LOAD_BAD_FILE' });
    const ok = join(dir, 'ok.json');
    writeFileSync(ok, JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry: [] }));
    await expect(load({ files: [ok], url: 'ftp://127.0.0.1/fhir' }, io)).rejects.toMatchObject({ code: 'ERR_FHIR_LOAD_BAD_URL' });
    await expect(load({ files: [ok], url: 'http://127.0.0.1:1/fhir' }, io)).rejects.toMatchObject({ code: 'ERR_FHIR_LOAD_UNREACHABLE' });
  });
});
