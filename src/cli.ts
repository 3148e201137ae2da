/**
 * argv → command. The only module that calls process.exit, and only after the
 * command has finished (servers keep the process alive until they close).
 */
import { Command, CommanderError } from 'commander';
import { commandNamed, commands } from './commands/index.js';
import { VERSION } from './version.js';

const program = new Command('hospital-api')
  .description('Install, run and prove the hospital side of a health-data exchange.')
  .version(VERSION)
  .option('--json', 'print one JSON document on stdout instead of human output')
  .option('-q, --quiet', 'no progress lines on stderr')
  .configureHelp({ showGlobalOptions: true }) // every subcommand's help lists --json and -q (inherited)
  .showHelpAfterError()
  .exitOverride();

const wanted = commandNamed(process.argv.slice(2));
for (const entry of commands) {
  if (entry.name === wanted) (await entry.load()).register(program);
  else program.command(entry.name).description(entry.summary); // listed in --help, never run
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version exit 0; a usage error exits 2 (see docs/errors.md).
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  throw err;
}
