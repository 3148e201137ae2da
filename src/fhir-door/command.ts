/**
 * `hospital-api fhir door --upstream http://hapi:8080 --token-file <file>` (hidden: the docker runtime's
 * compose file runs it, src/runtime/docker/render.ts): the door in front of HAPI until SIGTERM or SIGINT.
 */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { startFhirDoor } from './server.js';

export interface DoorCommandOptions {
  host: string;
  port: number;
  upstream: string;
  tokenFile: string;
}

/** The token in `path`, trimmed. @throws ERR_FHIR_DOOR_TOKEN (the message names the file, never its content) */
export function readDoorToken(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError('ERR_FHIR_DOOR_TOKEN', { path, detail: (err as NodeJS.ErrnoException).code ?? 'unreadable' }, { cause: err });
  }
  const token = text.trim();
  if (token.length < 16) throw new HospitalApiError('ERR_FHIR_DOOR_TOKEN', { path, detail: 'empty or shorter than 16 characters' });
  return token;
}

/** @returns exit code, once stopped */
export async function runFhirDoor(options: DoorCommandOptions): Promise<number> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const door = await startFhirDoor({ host: options.host, port: options.port, upstream: options.upstream, token: readDoorToken(options.tokenFile), log });
  await new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      void door.close().then(done, done);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  log('fhir-door: stopped');
  return 0;
}
