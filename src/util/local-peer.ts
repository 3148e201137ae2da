/**
 * Who is on the other end of a loopback TCP connection (issue 24: any local
 * account could read FHIR_API_KEY from the native admin API and every patient
 * from the FHIR server's full API, both on 127.0.0.1, whatever the 0600 file
 * modes said). On Linux the kernel lists every TCP socket of the network
 * namespace in /proc/net/tcp and /proc/net/tcp6 with the uid that owns it
 * (proc(5), "/proc/net/tcp": local_address, rem_address, …, uid). The
 * client's socket is the one whose local address is our peer's and whose
 * remote address is ours; its uid is the caller's.
 *
 * A caller is "the service" when that uid is this process's own, or root
 * (who can read the install directory's files anyway). Where there is no
 * /proc/net/tcp at all (not Linux) the check cannot be made and loopback is
 * all that is asked, as before; where there is one but the socket is not in
 * it, the answer is no (fail closed).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIP, type Socket } from 'node:net';
import { isLoopback } from './listen-address.js';

const TABLES = ['/proc/net/tcp', '/proc/net/tcp6'] as const;
const known = new WeakMap<Socket, Promise<boolean>>();

/** "127.0.0.1" → "0100007F": /proc prints each 32-bit word of an address in the host's (little-endian) order. */
function word(bytes: number[]): string {
  return bytes
    .slice()
    .reverse()
    .map((b) => b.toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase();
}

function ipv4Bytes(address: string): number[] {
  return address.split('.').map(Number);
}

/** The forms an address takes in /proc/net/tcp (IPv4) and /proc/net/tcp6 (IPv6, IPv4-mapped included). */
export function procAddresses(address: string, port: number): string[] {
  const p = port.toString(16).padStart(4, '0').toUpperCase();
  const plain = address.replace(/^::ffff:/i, '');
  if (isIP(plain) === 4) {
    const v4 = ipv4Bytes(plain);
    // ::ffff:a.b.c.d as four words: 0, 0, 0x0000FFFF, the address
    const mapped = `${'0'.repeat(16)}${word([0, 0, 0xff, 0xff])}${word(v4)}`;
    return [`${word(v4)}:${p}`, `${mapped}:${p}`];
  }
  if (plain === '::1') return [`${'0'.repeat(24)}${word([0, 0, 0, 1])}:${p}`];
  return [];
}

/**
 * The uid owning the socket whose local end is `from` and remote end `to`, in one /proc/net/tcp* text; null if absent.
 * The table lists every TCP socket of the host (10,000 and more under an idle-socket attack), so the pair is found
 * with one indexOf per address form, not by splitting every line: a line reads "sl: local rem st …", its two
 * addresses fixed-width and separated by single spaces.
 */
export function ownerIn(table: string, from: string[], to: string[]): number | null {
  for (const f of from) {
    for (const t of to) {
      const at = table.indexOf(` ${f} ${t} `);
      if (at < 0) continue;
      const end = table.indexOf('\n', at);
      const fields = table.slice(at, end < 0 ? undefined : end).trim().split(/\s+/);
      // local rem st tx:rx tr:when retrnsmt uid …
      const uid = Number(fields[6]);
      return Number.isInteger(uid) ? uid : null;
    }
  }
  return null;
}

/** How many times this process has read the socket tables (the cost loopbackPeerUid shares). */
let tableReads = 0;
export function peerTableReads(): number {
  return tableReads;
}

async function readTables(): Promise<string[]> {
  tableReads += 1;
  const texts = await Promise.all(TABLES.map((path) => readFile(path, 'utf8').catch(() => null)));
  return texts.filter((t): t is string => t !== null);
}

interface Lookup {
  from: string[];
  to: string[];
  resolve(uid: number | null): void;
}

/**
 * Lookups share reads: each read of the tables answers every lookup that asked before it began, so a burst of
 * k new connections (an attacker's reconnects) costs two reads, not k (the kernel prints the whole table each
 * time). A lookup that asks during a read waits for the next one: that read began before its socket may have
 * been listed.
 */
let waiting: Lookup[] = [];
let reading = false;

async function drain(): Promise<void> {
  reading = true;
  try {
    while (waiting.length) {
      const batch = waiting;
      waiting = [];
      const tables = await readTables();
      for (const l of batch) {
        let uid: number | null = null;
        for (const text of tables) {
          uid = ownerIn(text, l.from, l.to);
          if (uid !== null) break;
        }
        l.resolve(uid);
      }
    }
  } finally {
    reading = false;
  }
}

/** The uid of a loopback connection's caller; null when it cannot be found. */
export function loopbackPeerUid(socket: Socket): Promise<number | null> {
  const { remoteAddress, remotePort, localAddress, localPort } = socket;
  if (!remoteAddress || !remotePort || !localAddress || !localPort) return Promise.resolve(null);
  const from = procAddresses(remoteAddress, remotePort);
  const to = procAddresses(localAddress, localPort);
  return new Promise((resolve) => {
    waiting.push({ from, to, resolve });
    if (!reading) void drain();
  });
}

/** Whether the connection comes from this host's loopback (IPv4-mapped addresses included). */
export function isLoopbackPeer(socket: Socket): boolean {
  return isLoopback((socket.remoteAddress ?? '').replace(/^::ffff:/i, ''));
}

/** Whether the kernel tells who owns a connection here (Linux's /proc/net/tcp). */
export const PEER_UIDS_KNOWN = existsSync(TABLES[0]);

/**
 * True when the connection comes from this host's loopback AND (where the kernel says who
 * it is) from this process's user or root. Asked once per connection.
 */
export function isServiceCaller(socket: Socket): Promise<boolean> {
  let answer = known.get(socket);
  if (!answer) {
    answer = (async () => {
      if (!isLoopbackPeer(socket)) return false;
      if (!PEER_UIDS_KNOWN) return true;
      const uid = await loopbackPeerUid(socket);
      return uid !== null && (uid === 0 || uid === process.getuid?.());
    })();
    known.set(socket, answer);
  }
  return answer;
}
