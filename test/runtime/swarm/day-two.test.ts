/**
 * The swarm runtime's backup and restore command lines (src/runtime/swarm/day-two.ts), checked
 * without an engine: pg_dump, pg_restore and psql run in the ops task with the host, port,
 * database and user of the line of its password file that libpq must match (PostgreSQL docs,
 * "The Password File": the first line matching all four is used, so one field off and the
 * command stops at a password prompt it cannot answer), for the stack's own databases and for a
 * server the hospital runs; every value is one argv element. What they do on a real swarm is
 * proven by test/swarm-engine/stack.test.ts (backup, restore into a new directory, up, verify).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateCa } from '../../../src/tls/pki.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { DATABASE_PARTS, pgDumpArgv, pgRestoreArgv } from '../../../src/runtime/container/database-dump.js';
import { psqlArgv, targetOf } from '../../../src/runtime/swarm/day-two.js';
import { pgpass } from '../../../src/runtime/swarm/secrets.js';
import { swarmSettings } from '../../../src/runtime/swarm/settings.js';
import type { RuntimeFlags } from '../../../src/runtime/profile.js';
import { installConfig } from '../../helpers/install-config.js';

/** Distinct enough that finding one anywhere it must not be is no accident. */
const PASSWORDS = { kong: 'kong-pw-7Qx2Lm9Rt', hapi: 'hapi-pw-4Vb8Nc1Zs' };
afterAll(removeTempDirs);
/** The hospital's database CA (--database-ca), a file as install reads it. */
const caFile = join(tempDir('hapi-swarm-dbca-'), 'database-ca.pem');
writeFileSync(caFile, generateCa({ commonName: 'Hospital database CA' }).certPem);
const config = (flags: RuntimeFlags = {}) => installConfig({ runtime: 'swarm', swarm: swarmSettings(undefined, flags) });

/** The value after `flag` in an argv. */
function after(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe('swarm backup and restore through the ops task', () => {
  const cases: Array<[string, RuntimeFlags]> = [
    ["the stack's own databases", {}],
    ["the hospital's servers", { kongDatabaseUrl: 'postgres://gw@db1.hospital.example:6432/gateway', fhirDatabaseUrl: 'postgres://fhir_owner@[2001:db8::5]/fhir', databaseCa: caFile }],
  ];
  for (const [what, flags] of cases) {
    it(`reaches ${what} as the password file names them`, () => {
      const c = config(flags);
      // host:port:database:username of each line, libpq's `\` escapes undone (no field here ends in a backslash)
      const lines = pgpass(c, PASSWORDS).trim().split('\n').map((l) => l.split(/(?<!\\):/).slice(0, 4).map((f) => f.replace(/\\(.)/g, '$1')).join(' '));
      for (const db of DATABASE_PARTS) {
        const t = targetOf(c, db);
        const as = { user: t.user, database: t.dbname };
        for (const argv of [pgDumpArgv('ops1', as, t.at), pgRestoreArgv('ops1', as, 4096, t.at), psqlArgv('ops1', t, 'SELECT 1')]) {
          expect(argv.slice(0, argv[1] === '-i' ? 3 : 2)).toEqual(argv[1] === '-i' ? ['exec', '-i', 'ops1'] : ['exec', 'ops1']);
          // --dbname: the name, or a connection string naming it (the hospital's server, with TLS)
          const dbname = after(argv, '--dbname') ?? '';
          const name = dbname.includes('=') ? /(?:^| )dbname=(\S+)/.exec(dbname)?.[1] : dbname;
          const fields = [after(argv, '--host'), after(argv, '--port'), name, after(argv, '--username')];
          // a server outside the swarm is reached with TLS verified against the hospital's CA, host name included
          expect(dbname.includes('sslmode=verify-full sslrootcert=/run/secrets/database-ca.pem'), dbname).toBe(!t.own);
          // the password is never on the command line: libpq reads PGPASSFILE, and a prompt is refused
          expect(argv).toContain('--no-password');
          for (const pw of Object.values(PASSWORDS)) expect(argv.join(' ')).not.toContain(pw);
          expect(lines, argv.join(' ')).toContain(fields.join(' '));
        }
      }
      expect(targetOf(c, DATABASE_PARTS[0]!).own).toBe(!flags.kongDatabaseUrl);
    });
  }

  it('runs each statement list as one transaction that stops at its first error, each value one argv element', () => {
    const odd = "x'; DROP TABLE t; --";
    const argv = psqlArgv(odd, { at: { host: odd, port: '5432' }, user: odd, dbname: odd }, 'SELECT 1');
    expect(argv.filter((a) => a === odd)).toHaveLength(4);
    expect(argv).toEqual(expect.arrayContaining(['--single-transaction', '--no-psqlrc']));
    expect(after(argv, '--set')).toBe('ON_ERROR_STOP=1');
    expect(argv[argv.length - 1]).toBe('SELECT 1');
  });
});
