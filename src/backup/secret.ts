/**
 * Where the backup key comes from: HOSPITAL_API_BACKUP_PASSPHRASE, a key file
 * the hospital keeps (--key-file, at least 32 bytes), or a passphrase typed at
 * the terminal (not echoed). Never a command-line argument: those show in `ps`.
 */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';

export const PASSPHRASE_ENV = 'HOSPITAL_API_BACKUP_PASSPHRASE';
const MIN_PASSPHRASE = 12;
const MIN_KEY_FILE = 32;

export interface BackupSecret {
  secret: Buffer;
  source: 'passphrase' | 'key-file';
}

/** Reads one line from the terminal without echo (raw mode). */
function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const input = process.stdin;
    process.stderr.write(question);
    input.setRawMode(true);
    input.resume();
    let text = '';
    const done = (err?: Error): void => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(text);
    };
    const onData = (chunk: Buffer): void => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003') return done(new HospitalApiError('ERR_BACKUP_PASSPHRASE', { detail: 'cancelled' }));
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
        else text += ch;
      }
    };
    input.on('data', onData);
  });
}

export async function backupSecret(options: { keyFile?: string; confirm?: boolean }, env: NodeJS.ProcessEnv = process.env): Promise<BackupSecret> {
  if (options.keyFile) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(options.keyFile);
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path: options.keyFile, detail: (err as NodeJS.ErrnoException).code ?? 'error' }, { cause: err });
    }
    if (bytes.length < MIN_KEY_FILE) throw new HospitalApiError('ERR_BACKUP_PASSPHRASE', { detail: `${options.keyFile} holds ${bytes.length} bytes; a key file needs at least ${MIN_KEY_FILE}` });
    return { secret: bytes, source: 'key-file' };
  }
  let pass = env[PASSPHRASE_ENV];
  if (pass === undefined && process.stdin.isTTY && process.stderr.isTTY) {
    pass = await promptHidden('Backup passphrase: ');
    if (options.confirm && (await promptHidden('Again: ')) !== pass) throw new HospitalApiError('ERR_BACKUP_PASSPHRASE', { detail: 'the two entries differ' });
  }
  if (pass === undefined) throw new HospitalApiError('ERR_BACKUP_PASSPHRASE', { detail: `neither ${PASSPHRASE_ENV} nor --key-file is given, and there is no terminal to ask` });
  if ([...pass].length < MIN_PASSPHRASE) throw new HospitalApiError('ERR_BACKUP_PASSPHRASE', { detail: `a passphrase needs at least ${MIN_PASSPHRASE} characters` });
  return { secret: Buffer.from(pass, 'utf8'), source: 'passphrase' };
}
