import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface ConsumerOptions extends GlobalOptions {
  dir?: string;
  key?: string;
  writeEnv?: boolean;
}

/** `hospital-api consumer create`: the hospital's gateway consumer and its key (spec §2.3, §5) */
export function register(program: Command): void {
  const consumer = program.command('consumer').description(SUMMARIES.consumer);
  consumer
    .command('create <username>')
    .description('create the consumer and its key-auth credential; prints the key once')
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--key <key>', 'use this key instead of a generated one')
    .option('--write-env', "write the key as FHIR_API_KEY into the Hospital API's settings and restart it")
    .action(
      action<ConsumerOptions>('consumer create', async (options, io, args) => {
        const { defaultInstallDir } = await import('../runtime/layout.js');
        const { openRuntime } = await import('../runtime/index.js');
        const { createConsumer } = await import('../install/consumer.js');
        const dir = options.dir ?? defaultInstallDir();
        const result = await createConsumer(
          openRuntime(dir),
          dir,
          { username: args[0] as string, ...(options.key ? { key: options.key } : {}), writeEnv: options.writeEnv === true },
          (t) => io.log(t),
        );
        // The key goes to stdout, once; logs (stderr) never carry it.
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'consumer create', result }));
        else {
          io.out(result.key);
          io.log(
            result.envWritten
              ? 'The key above is stored in hospital-api.env; keep no other copy.'
              : 'Store the key above now: it is not shown again. Put it in hospital-api.env as FHIR_API_KEY, or rerun with --write-env.',
          );
        }
      }),
    );
}
