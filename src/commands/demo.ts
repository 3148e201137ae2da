import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { addDockerOptions, addPortOptions, type DockerFlags, type PortFlags } from '../install/port-flags.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir } from '../install-dir/layout.js';
import { parseListen } from '../util/listen-address.js';

interface DemoCommandOptions extends GlobalOptions, PortFlags, DockerFlags {
  dir?: string;
  runtime?: string;
  patients?: string;
  sizes?: string;
  platformPort?: string;
  platformStandIn?: boolean;
  listen?: string;
}

/** `hospital-api demo` (npm start): DEMO install (native, or docker with --runtime docker), up, data, consumer, verify, then a curl to paste. */
export function register(program: Command): void {
  const command = program
    .command('demo')
    .description(SUMMARIES.demo)
    .option('--dir <dir>', 'demo install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--patients <n>', 'synthetic patients to load on the first run', '20')
    .option('--sizes <range>', 'resources per patient on the first run', '10-2000')
    .option('--runtime <name>', 'first run: native (default) or docker (the production stack: Kong, HAPI FHIR, Postgres)');
  addDockerOptions(addPortOptions(command, 'first run: '))
    .option('--platform-port <n>', 'first run: DEMO platform stand-in port (loopback; default: any free port)')
    // Internal: the supervised DEMO platform stand-in itself.
    .addOption(command.createOption('--platform-stand-in', 'run the DEMO platform stand-in').hideHelp())
    .addOption(command.createOption('--listen <host:port>', 'stand-in address').hideHelp())
    .action(
      action<DemoCommandOptions>('demo', async (options, io) => {
        const dir = options.dir ?? defaultInstallDir();
        if (options.platformStandIn) {
          const { runPlatformStandIn } = await import('../demo/platform-stand-in.js');
          const { host, port } = parseListen(options.listen ?? '', '--listen');
          return runPlatformStandIn(dir, host, port);
        }
        const { runDemo, renderDemo } = await import('../demo/flow.js');
        const result = await runDemo({ ...options, dir }, io);
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'demo', result: { ...result, tokens: undefined, tokensFile: `${result.dir}/demo/tokens.json` } }));
        else renderDemo(result, io);
        return 0;
      }),
    );
}
