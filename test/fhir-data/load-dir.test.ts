/**
 * `fhir load --dir <install> <directory>` loads the directory's *.json and *.ndjson in name
 * order (it crashed with EISDIR, exit 70); -q silences the progress, not the result; the
 * progress counts bytes with their unit.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeInstallConfig } from '../../src/install-dir/install-config.js';
import { loadFiles } from '../../src/fhir-data/load/files.js';
import { formatBytes } from '../../src/output/bytes.js';
import { runCli } from '../helpers/cli.js';
import { installConfig } from '../helpers/install-config.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { startFhir, type RunningFhir } from '../helpers/fhir-server.js';

let fhir: RunningFhir;
beforeAll(async () => {
  fhir = await startFhir(tempDir('fhir-load-dir-'));
});
afterAll(async () => {
  await fhir?.stop();
  removeTempDirs();
});

describe('fhir load of a directory', () => {
  it('loads what fhir generate wrote there, into the --dir installation, with progress in bytes; -q keeps only the result', async () => {
    const site = tempDir('fhir-load-dir-site-');
    writeInstallConfig(site, installConfig({ runtime: 'native', hosts: ['127.0.0.1'], ports: { fhir: Number(new URL(fhir.base).port) } }));
    const data = tempDir();
    const gen = await runCli(['fhir', 'generate', '--patients', '2', '--seed', 'dir', '--sizes', '30', '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);

    const loaded = await runCli(['fhir', 'load', '--dir', site, data]);
    expect(loaded.exitCode, String(loaded.stderr)).toBe(0);
    expect(loaded.stdout).toMatch(/^Loaded 3 bundles from 2 files: 114 created/);
    expect(loaded.stderr).toMatch(/fhir load \d+\.\d KiB\/\d+\.\d KiB \d+%/);

    const quiet = await runCli(['-q', 'fhir', 'load', '--dir', site, data]);
    expect(quiet.exitCode, String(quiet.stderr)).toBe(0);
    expect(quiet.stdout).toMatch(/^Loaded 3 bundles from 2 files: 0 created, 114 already present/);
    expect(String(quiet.stderr)).toBe('');
  });

  it('takes regular *.json / *.ndjson files directly in it, in name order: no subfolders, links, hidden files or the manifest', () => {
    const dir = tempDir();
    const outside = tempDir();
    writeFileSync(join(outside, 'secret.json'), '{}');
    for (const name of ['b.ndjson', 'a.json', 'C.JSON', 'notes.txt', 'manifest.json', '.fhir-load-state.json']) writeFileSync(join(dir, name), '');
    mkdirSync(join(dir, 'sub.json'));
    writeFileSync(join(dir, 'sub.json', 'deep.json'), '');
    symlinkSync(join(outside, 'secret.json'), join(dir, 'link.json'));
    expect(loadFiles([dir])).toEqual(['C.JSON', 'a.json', 'b.ndjson'].map((n) => join(dir, n)));
    expect(loadFiles([join(dir, 'a.json'), dir]).slice(0, 2)).toEqual([join(dir, 'a.json'), join(dir, 'C.JSON')]);
  });

  it('refuses a directory with nothing to load as a usage error', async () => {
    const r = await runCli(['--json', 'fhir', 'load', '--url', fhir.base, tempDir()]);
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(String(r.stdout)).error).toMatchObject({ code: 'ERR_USAGE', message: expect.stringMatching(/no \.json or \.ndjson file/) });
  });

  it('formats byte counts with their unit', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.0 MiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
