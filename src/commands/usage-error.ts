/**
 * A usage error commander finds before any handler runs (unknown option, missing
 * argument, bad value) shown as every other failure is with --json: one
 * `{ok:false, command, error:{code:'ERR_USAGE', message, hint}}` document on stdout
 * (clig.dev: machine-readable output stays machine-readable when things go wrong).
 * Loaded only on that path (commands/index.ts), so a normal run never pays for it.
 */
import type { Command } from 'commander';
import { HospitalApiError } from '../errors/index.js';

/** The command path argv names (`fhir load`), as far as the program knows it; '' when none. */
export function commandPath(program: Command, argv: readonly string[]): string {
  const names: string[] = [];
  let at = program;
  for (const word of argv) {
    if (word === '--') break;
    if (word.startsWith('-')) continue;
    const sub = at.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    names.push(sub.name());
    at = sub;
  }
  return names.join(' ');
}

/** commander's message without its `error: ` prefix; its bare help request names what is missing. */
function detail(message: string, command: string): string {
  if (message === '(outputHelp)') return `name a subcommand: hospital-api ${command ? `${command} ` : ''}--help lists them`;
  return message.replace(/^error:\s*/, '').trim();
}

/** The one JSON document of a usage error, for stdout. */
export function usageErrorDocument(program: Command, argv: readonly string[], message: string): string {
  const command = commandPath(program, argv);
  const err = new HospitalApiError('ERR_USAGE', { detail: detail(message, command) });
  return JSON.stringify({ ok: false, command: command || null, error: { code: err.code, message: err.message, hint: err.hint ?? null } });
}
