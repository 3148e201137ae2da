/**
 * The command registry: sorted, one module per command, file name = command
 * name. Each module registers its subcommand and loads heavy code lazily in
 * its action, so `--help` stays fast.
 */
import type { Command } from 'commander';
import { register as backup } from './backup.js';
import { register as cert } from './cert.js';
import { register as consumer } from './consumer.js';
import { register as demo } from './demo.js';
import { register as down } from './down.js';
import { register as fhir } from './fhir.js';
import { register as gateway } from './gateway.js';
import { register as install } from './install.js';
import { register as logs } from './logs.js';
import { register as record } from './record.js';
import { register as restore } from './restore.js';
import { register as serve } from './serve.js';
import { register as status } from './status.js';
import { register as systemd } from './systemd.js';
import { register as up } from './up.js';
import { register as upgrade } from './upgrade.js';
import { register as verify } from './verify.js';

export const commands: ReadonlyArray<(program: Command) => void> = [
  backup,
  cert,
  consumer,
  demo,
  down,
  fhir,
  gateway,
  install,
  logs,
  record,
  restore,
  serve,
  status,
  systemd,
  up,
  upgrade,
  verify,
];
