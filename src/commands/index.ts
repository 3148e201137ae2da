/**
 * The command registry: one module per command, file name = command name. Only the
 * command being run is loaded; `--help` lists the others from their summaries, so it
 * stays fast. Each module loads its heavy code lazily in its action.
 */
import type { Command } from 'commander';
import { SUMMARIES, type CommandName } from './summaries.js';

export interface CommandEntry {
  name: CommandName;
  summary: string;
  load: () => Promise<{ register(program: Command): void }>;
}

const loaders: Record<CommandName, CommandEntry['load']> = {
  audit: () => import('./audit.js'),
  backup: () => import('./backup.js'),
  cert: () => import('./cert.js'),
  consumer: () => import('./consumer.js'),
  demo: () => import('./demo.js'),
  down: () => import('./down.js'),
  fhir: () => import('./fhir.js'),
  gateway: () => import('./gateway.js'),
  install: () => import('./install.js'),
  logs: () => import('./logs.js'),
  record: () => import('./record.js'),
  restore: () => import('./restore.js'),
  serve: () => import('./serve.js'),
  status: () => import('./status.js'),
  systemd: () => import('./systemd.js'),
  up: () => import('./up.js'),
  upgrade: () => import('./upgrade.js'),
  verify: () => import('./verify.js'),
};

export const commands: readonly CommandEntry[] = (Object.keys(loaders) as CommandName[])
  .sort()
  .map((name) => ({ name, summary: SUMMARIES[name], load: loaders[name] }));

/** Loaded only when commander refuses an argv and --json asked for a document (cli.ts). */
export const loadUsageError = () => import('./usage-error.js');

/** The command an argv names: the first word that is not an option (`help <name>` names <name>). */
export function commandNamed(argv: readonly string[]): string | undefined {
  const words = argv.filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}
