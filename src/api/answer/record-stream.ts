/**
 * The worker behind POST /api/patients once exactly one patient matched: its
 * record, streamed. The `started` line is written before anything is fetched
 * and on disk (fdatasync) before anything is sent, so even a SIGKILL mid-stream
 * leaves a trace; its sync runs while the first page is fetched, and a sync that
 * fails ends the request in ERR_API_AUDIT_UNAVAILABLE with nothing of the record
 * sent (issue 28; docs/api.md#audit-log). Every page of $everything goes out as
 * it arrives, the next fetched while this one is written; the end line is on
 * disk before the closing bytes. A failure before the first byte is an ordinary
 * error reply; after it, the connection is cut.
 */
import type { FastifyReply } from 'fastify';
import type { ApiContext } from '../server/context.js';
import type { PatientRequest } from '../request/patient-request.js';
import { RECORD_CLOSE, RecordWriter } from './record-writer.js';

const CLOSE_BYTES = Buffer.byteLength(RECORD_CLOSE);

/** @throws what fails before the first byte (ERR_API_AUDIT_UNAVAILABLE, ERR_API_FHIR_*, ERR_API_RECORD_TOO_LARGE) */
export async function streamRecord(ctx: ApiContext, state: PatientRequest, reply: FastifyReply, patientId: string): Promise<FastifyReply> {
  state.forPatient(patientId);
  // The caller left while the platform or the search answered: its end line is written; fetch nothing for nobody.
  if (state.ended) return reply.hijack();
  const { synced } = await state.writeStarted();
  // The end line's file opens as soon as the started line is on disk, while the first page is still on its way.
  synced.then(() => ctx.audit.prepare({ syncOnWrite: true }), () => undefined);

  const writer = new RecordWriter(reply, ctx.config.sendTimeoutMs, (bytes) => state.sent(bytes));
  try {
    await ctx.fhir.everything(
      patientId,
      async (entries, count) => {
        // Fail closed: not one byte of the record before its started line is on disk.
        await synced;
        // Another request's line may have taken the O_DSYNC file's turn since: this record's end line asks for it again.
        ctx.audit.prepare({ syncOnWrite: true });
        ctx.metrics.pages.inc();
        ctx.metrics.resources.inc(count);
        return writer.page(entries, count);
      },
      state.stats,
    );
    await synced;
  } catch (err) {
    if (!writer.open) {
      // A failed sync outranks a FHIR failure it overlapped: the caller is told the audit log is down.
      await synced;
      throw err;
    }
    await state.cut(err);
    return reply;
  }
  if (await state.completeRecord(CLOSE_BYTES)) await writer.close();
  return reply;
}
