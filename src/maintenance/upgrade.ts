/**
 * `hospital-api upgrade` (issue 15): a newer toolkit migrates an older install
 * directory in place. Order: refuse a running stack; preflight checks that
 * change nothing (the gateway state parses, the FHIR store has the schema this
 * release reads); an automatic encrypted backup; then a journal in
 * `<dir>/.upgrade/` with a copy of every file a step may change and the modes
 * of every secret file, and the steps, install.json last (the commit point).
 * A step that fails rolls everything back from the journal; a run that was
 * killed leaves the journal, and the next `upgrade` rolls it back and starts
 * over (`upgrade --rollback` only rolls back). Never a half-migrated directory.
 */
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HospitalApiError, isHospitalApiError } from '../errors/index.js';
import { FHIR_STORE_FILE, inspectFhirStore } from '../fhir/store/online-backup.js';
import { canOpenSchema, SCHEMA_VERSION } from '../fhir/store/schema.js';
import { loadSnapshotFromFile } from '../gateway/store/state-file.js';
import { renderApiEnv } from '../install/files.js';
import { createBackup } from '../backup/create.js';
import { INSTALL_FORMAT, writeInstallConfig, type InstallConfig } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import { recordedStack, runtimeFor } from '../runtime/index.js';
import { writeSecretFile } from '../util/atomic-write.js';
import { VERSION } from '../version.js';

interface Step {
  name: string;
  /** Files (relative to the install directory) the step may rewrite. */
  files: string[];
  run(dir: string, config: InstallConfig): void;
}

interface Migration {
  from: number;
  to: number;
  steps: Step[];
}

/** Secret files: format 2 guarantees mode 0600 on each (layout.ts). */
function secretFiles(dir: string): string[] {
  const p = installPaths(dir);
  const rel = (abs: string): string => abs.slice(p.root.length + 1);
  const out = [p.apiEnv, p.gatewayState].filter((f) => existsSync(f)).map(rel);
  if (existsSync(p.tls)) for (const f of readdirSync(p.tls)) if (f.endsWith('.key')) out.push(`tls/${f}`);
  if (existsSync(p.secrets)) for (const f of readdirSync(p.secrets)) out.push(`secrets/${f}`);
  return out;
}

const MIGRATIONS: Migration[] = [
  {
    from: 1,
    to: 2,
    steps: [
      {
        name: 'secret files 0600',
        files: [],
        run(dir) {
          for (const f of secretFiles(dir)) chmodSync(join(installPaths(dir).root, f), 0o600);
        },
      },
      {
        name: 'settings for this directory',
        files: ['hospital-api.env'],
        // Paths in the settings follow the directory (it may have been moved or restored elsewhere); the hospital's own values stay.
        run(dir, config) {
          const p = installPaths(dir);
          writeSecretFile(p.apiEnv, renderApiEnv(p, config));
        },
      },
    ],
  },
];

interface Journal {
  from: number;
  to: number;
  startedAt: string;
  backup: string | null;
  /** Saved files: relative path → existed before. */
  saved: Record<string, boolean>;
  modes: Record<string, number>;
  step: string;
}

function upgradeDir(dir: string): string {
  return join(installPaths(dir).root, '.upgrade');
}

function writeJournal(dir: string, journal: Journal): void {
  const path = join(upgradeDir(dir), 'journal.json');
  writeFileSync(`${path}.tmp`, JSON.stringify(journal, null, 2), { mode: 0o600 });
  const fd = openSync(`${path}.tmp`, 'r');
  try { fsyncSync(fd); } finally { closeSync(fd); }
  // rename is atomic: the journal is the old one or the new one
  renameSync(`${path}.tmp`, path);
}

function readJournal(dir: string): Journal | null {
  const path = join(upgradeDir(dir), 'journal.json');
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Journal;
  } catch {
    return null; // killed before the first journal was complete: nothing was changed yet
  }
}

/** Puts back every saved file and mode; removes the journal. */
function rollback(dir: string, journal: Journal | null, log: (text: string) => void): void {
  const root = installPaths(dir).root;
  if (journal) {
    for (const [rel, existed] of Object.entries(journal.saved)) {
      const target = join(root, rel);
      if (existed) {
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(join(upgradeDir(dir), 'original', rel), target);
      } else rmSync(target, { force: true });
    }
    for (const [rel, mode] of Object.entries(journal.modes)) if (existsSync(join(root, rel))) chmodSync(join(root, rel), mode);
    log(`rolled back to format ${journal.from} (interrupted at "${journal.step}")`);
  }
  rmSync(upgradeDir(dir), { recursive: true, force: true });
}

export interface UpgradeResult {
  dir: string;
  from: number;
  to: number;
  backup: string | null;
  steps: string[];
  rolledBack: boolean;
}

export async function upgradeInstall(
  dir: string,
  options: { keyFile?: string; rollbackOnly?: boolean; env?: NodeJS.ProcessEnv },
  log: (text: string) => void,
): Promise<UpgradeResult> {
  const paths = installPaths(dir);
  const root = paths.root;
  const env = options.env ?? process.env;
  if (!existsSync(paths.installJson)) throw new HospitalApiError('ERR_RUNTIME_NOT_INSTALLED', { dir: root });
  if (recordedStack(root)?.running()) throw new HospitalApiError('ERR_UPGRADE_RUNNING', { dir: root });
  const interrupted = existsSync(upgradeDir(root));
  if (interrupted) {
    log('an earlier upgrade did not finish: rolling it back first');
    rollback(root, readJournal(root), log);
  }
  const raw = JSON.parse(readFileSync(paths.installJson, 'utf8')) as InstallConfig;
  const from = raw.formatVersion;
  if (options.rollbackOnly) return { dir: root, from, to: from, backup: null, steps: [], rolledBack: interrupted };
  if (from === INSTALL_FORMAT) {
    log(`${root} is already at format ${INSTALL_FORMAT}`);
    return { dir: root, from, to: from, backup: null, steps: [], rolledBack: interrupted };
  }
  const path = MIGRATIONS.filter((m) => m.from >= from && m.to <= INSTALL_FORMAT).sort((a, b) => a.from - b.from);
  if (!Number.isInteger(from) || from > INSTALL_FORMAT || path[0]?.from !== from || path.some((m, i) => i > 0 && m.from !== path[i - 1]!.to)) {
    throw new HospitalApiError('ERR_UPGRADE_FORMAT', { dir: root, found: String(from), known: INSTALL_FORMAT, hint: 'Use the toolkit release that made this directory, or a newer one.' });
  }

  // Preflight: reads only.
  const preflight = (detail: string): HospitalApiError => new HospitalApiError('ERR_UPGRADE_PREFLIGHT', { dir: root, detail });
  try {
    loadSnapshotFromFile(paths.gatewayState);
  } catch (err) {
    throw preflight(`the gateway state does not read: ${(err as Error).message}`);
  }
  const store = join(paths.fhirData, FHIR_STORE_FILE);
  if (existsSync(store)) {
    let schemaVersion: number;
    try {
      schemaVersion = inspectFhirStore(store).schemaVersion;
    } catch (err) {
      throw preflight(`the FHIR store does not pass its check: ${(err as Error).message}`);
    }
    // The store's own migration belongs to the FHIR server (src/fhir/store/schema.ts): it migrates an older
    // schema on its next open, in one transaction, after the backup below.
    if (!canOpenSchema(schemaVersion)) throw preflight(`the FHIR store has schema ${schemaVersion}; this release reads schema ${SCHEMA_VERSION} and has no migration for it`);
  }

  // The backup comes first: with no key source, nothing is changed.
  log(`format ${from} → ${INSTALL_FORMAT}: taking a backup first`);
  const config = { ...raw };
  // docker: pg_dump inside the database containers (src/runtime/docker/day-two.ts)
  const runtime = await runtimeFor(root, config);
  const backup = await createBackup(runtime, root, {
    config, env,
    // Milliseconds in the name: a rerun right after a killed run (same second) must not meet that run's backup.
    out: join(root, 'backups', `pre-upgrade-format-${from}-${new Date().toISOString().replace(/[-:]/g, '')}.tar`),
    ...(options.keyFile ? { keyFile: options.keyFile } : {}),
  }, log);

  const steps = path.flatMap((m) => m.steps);
  const journal: Journal = { from, to: INSTALL_FORMAT, startedAt: new Date().toISOString(), backup: backup.out, saved: {}, modes: {}, step: 'saving the originals', };
  mkdirSync(join(upgradeDir(root), 'original'), { recursive: true, mode: 0o700 });
  for (const rel of new Set(['install.json', ...steps.flatMap((s) => s.files)])) {
    const abs = join(root, rel);
    journal.saved[rel] = existsSync(abs);
    if (journal.saved[rel]) {
      const copy = join(upgradeDir(root), 'original', rel);
      mkdirSync(dirname(copy), { recursive: true, mode: 0o700 });
      copyFileSync(abs, copy);
      chmodSync(copy, statSync(abs).mode & 0o777);
    }
  }
  for (const rel of secretFiles(root)) journal.modes[rel] = statSync(join(root, rel)).mode & 0o777;
  writeJournal(root, journal);
  const done: string[] = [];
  try {
    for (const step of steps) {
      journal.step = step.name;
      writeJournal(root, journal);
      step.run(root, config);
      done.push(step.name);
      log(`  ${step.name}: done`);
    }
    journal.step = 'install.json';
    writeJournal(root, journal);
    const upgrades = [...(raw.upgrades ?? []), { from, to: INSTALL_FORMAT, toolkitVersion: VERSION, at: new Date().toISOString(), backup: backup.out }];
    writeInstallConfig(root, { ...config, formatVersion: INSTALL_FORMAT, toolkitVersion: VERSION, upgrades });
    rmSync(upgradeDir(root), { recursive: true, force: true });
  } catch (err) {
    rollback(root, journal, log);
    throw new HospitalApiError('ERR_UPGRADE_FAILED', { dir: root, from, step: journal.step, detail: isHospitalApiError(err) ? err.message : (err as Error).message, backup: backup.out }, { cause: err });
  }
  log(`${root} is at format ${INSTALL_FORMAT}; the backup taken before is ${backup.out}`);
  return { dir: root, from, to: INSTALL_FORMAT, backup: backup.out, steps: [...done, 'install.json'], rolledBack: interrupted };
}
