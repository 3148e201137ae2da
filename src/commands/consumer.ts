import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';
import { renderTable } from '../output/table.js';

interface ConsumerOptions extends GlobalOptions {
  dir?: string;
  key?: string;
  writeEnv?: boolean;
}

interface RevokeOptions extends GlobalOptions {
  dir?: string;
  keyFile?: string;
  force?: boolean;
}

const DIR_HELP = 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)';

async function open(dir: string | undefined) {
  const { openRuntime } = await import('../runtime/index.js');
  const root = dir ?? defaultInstallDir();
  return { dir: root, runtime: await openRuntime(root), consumer: await import('../install/consumer.js') };
}

/**
 * `hospital-api consumer create`: the hospital's gateway consumer and its key (spec §2.3, §5);
 * `keys`, `rotate-key` and `revoke-key` for the years after (issue 15).
 */
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
        const { openRuntime } = await import('../runtime/index.js');
        const { createConsumer } = await import('../install/consumer.js');
        const dir = options.dir ?? defaultInstallDir();
        const result = await createConsumer(
          await openRuntime(dir),
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

  consumer
    .command('keys <username>')
    .description("list the consumer's key-auth credentials by id (never the keys), marking the one the Hospital API uses")
    .option('--dir <dir>', DIR_HELP)
    .action(
      action<ConsumerOptions>('consumer keys', async (options, io, args) => {
        const { dir, runtime, consumer: c } = await open(options.dir);
        const keys = await c.listKeys(runtime, dir, args[0] as string);
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'consumer keys', result: { username: args[0], keys } }));
        io.out(renderTable(['key id', 'created', 'used by the Hospital API'], keys.map((k) => [k.id, k.createdAt ?? '', k.inUse ? 'yes' : ''])).trimEnd());
      }),
    );
  consumer
    .command('rotate-key <username>')
    .description('add a new key, switch the Hospital API to it without a dropped request, then revoke the old key; prints the new key once')
    .option('--dir <dir>', DIR_HELP)
    .option('--write-env', 'switch the Hospital API to the new key (hospital-api.env, reloaded without a restart) and revoke the old key')
    .action(
      action<ConsumerOptions>('consumer rotate-key', async (options, io, args) => {
        const { dir, runtime, consumer: c } = await open(options.dir);
        const result = await c.rotateKey(runtime, dir, { username: args[0] as string, writeEnv: options.writeEnv === true }, (t) => io.log(t));
        // The new key goes to stdout, once; logs (stderr) never carry it.
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'consumer rotate-key', result }));
        io.out(result.key);
        io.log(
          result.envWritten
            ? `Rotated: the Hospital API uses the key above (stored in hospital-api.env); the old credential ${result.revokedCredentialId} is revoked.`
            : 'Store the key above now: it is not shown again. Both keys work until you put this one in place and run ' +
                `\`hospital-api consumer revoke-key ${args[0]} <old key id> --dir ${dir}\` (ids: \`hospital-api consumer keys ${args[0]} --dir ${dir}\`).`,
        );
      }),
    );
  consumer
    .command('revoke-key <username> [key-id]')
    .description('revoke one key-auth credential, by id or by the leaked key in --key-file (refuses the key the Hospital API uses)')
    .option('--dir <dir>', DIR_HELP)
    .option('--key-file <file>', 'file holding the leaked key (read, compared in constant time, never printed)')
    .option('--force', 'revoke it even if it is the key the Hospital API uses (its requests then fail until it has a new key)')
    .action(
      action<RevokeOptions>('consumer revoke-key', async (options, io, args) => {
        const { dir, runtime, consumer: c } = await open(options.dir);
        const result = await c.revokeKey(
          runtime,
          dir,
          { username: args[0] as string, ...(args[1] ? { keyId: args[1] } : {}), ...(options.keyFile ? { keyFile: options.keyFile } : {}), force: options.force === true },
          (t) => io.log(t),
        );
        if (io.json) return io.out(JSON.stringify({ ok: true, command: 'consumer revoke-key', result }));
        io.out(`revoked ${result.revokedCredentialId}`);
      }),
    );
}
