/**
 * Lowers the calling thread's scheduling priority (Linux: a thread's nice value is its own, set through its
 * thread id, read from /proc/thread-self; https://man7.org/linux/man-pages/man7/sched.7.html). Bulk work on a
 * worker thread then takes the CPU only when interactive callers leave it free: under CFS a nice-10 thread
 * gets about a tenth of a nice-0 one's share (weights 110 and 1024). Elsewhere, or when refused, nothing changes.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

export function lowerThisThread(nice: number): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
