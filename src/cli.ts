/**
 * argv → command. The only module that calls process.exit, and only after the
 * command has finished (servers keep the process alive until they close).
 */
import { Command, CommanderError } from 'commander';
import { commandNamed, commands, loadUsageError } from './commands/index.js';
import { VERSION } from './version.js';

const argv = process.argv.slice(2);
/** --json anywhere before `--`: even a usage error then answers with one JSON document on stdout. */
const json = (argv.includes('--') ? argv.slice(0, argv.indexOf('--')) : argv).includes('--json');

// Settings made here, before any subcommand exists, are inherited by every subcommand.
const program = new Command('hospital-api')
  .description('Install, run and prove the hospital side of a health-data exchange.')
  .version(VERSION)
  .option('--json', 'print one JSON document on stdout instead of human output')
  .option('-q, --quiet', 'no progress lines on stderr')
  .configureHelp({ showGlobalOptions: true }) // every subcommand's help lists --json and -q (inherited)
  .showHelpAfterError(!json)
  .configureOutput(json ? { outputError: () => undefined } : {})
  .exitOverride();

const wanted = commandNamed(argv);
for (const entry of commands) {
  if (entry.name === wanted) (await entry.load()).register(program);
  else program.command(entry.name).description(entry.summary); // listed in --help, never run
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // --help and --version exit 0; a usage error exits 2 (see docs/errors.md and docs/cli.md).
    if (err.exitCode !== 0 && json) process.stdout.write((await loadUsageError()).usageErrorDocument(program, argv, err.message) + '\n');
    process.exit(err.exitCode === 0 ? 0 : 2);
  }
  throw err;
}
