/**
 * One POST /api/patients, and the one owner of its bookkeeping: whatever ends
 * the request (a reply, an error, a record completed or cut mid-stream, a
 * caller that leaves, an audit log that cannot be written), its audit end line
 * is written once and it is counted in the metrics once, with what the caller
 * got. The route tells it what happened; it decides what is written, and cuts
 * a record that must not complete (fail closed: no record without its line).
 */
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { callerRequestId } from './caller.js';
import { clientErrorStatus } from './client-error.js';
import { auditFailureLog, type AuditDecision, type AuditLog, type AuditPhase, type AuditRecord } from '../audit/audit.js';
import type { EverythingStats } from '../fhir/fhir-client.js';
import type { ApiMetrics } from '../server/metrics.js';

const ROUTE = '/api/patients';
/** nginx's status for a client that closed its request before the answer (NGX_HTTP_CLIENT_CLOSED_REQUEST). */
const CALLER_LEFT_STATUS = 499;
/**
 * The reason `left` aborts with. Nothing reads it (a waiter only learns that it aborted), and every request's
 * connection closes: abort() without a reason builds a DOMException per request, its stack trace captured,
 * a cost the serve profile of issue 49 showed on every record.
 */
const CALLER_LEFT = 'caller left';

interface Outcome {
  decision: AuditDecision;
  code: string | null;
  status: number;
  aborted: boolean;
}

export class PatientRequest {
  /** Pages and resources of the record, filled in by the FHIR client. */
  readonly stats: EverythingStats = { pages: 0, resources: 0 };
  readonly #start = process.hrtime.bigint();
  readonly #request: FastifyRequest;
  readonly #raw: ServerResponse;
  readonly #audit: AuditLog;
  readonly #metrics: ApiMetrics;
  #platformCareId: string | null = null;
  #identifierSystem: string | null;
  #fhirPatientId: string | null = null;
  #decision: AuditDecision | null = null;
  #code: string | null = null;
  #bytes = 0;
  /** The end line is written or being written: no other ending writes one. */
  #ending = false;
  #counted = false;
  #releaseSlot: (() => void) | null = null;
  readonly #left = new AbortController();

  /** Starts the request's clock; the closing of `raw` is one of its endings. */
  constructor(request: FastifyRequest, raw: ServerResponse, out: { audit: AuditLog; metrics: ApiMetrics; config: { identifierSystem: string | null } }) {
    this.#request = request;
    this.#identifierSystem = out.config.identifierSystem;
    this.#raw = raw;
    this.#audit = out.audit;
    this.#metrics = out.metrics;
    raw.once('close', () => this.#closed());
  }

  /** Aborted when the connection closes: a request waiting for a slot leaves the queue. */
  get left(): AbortSignal {
    return this.#left.signal;
  }

  /** A concurrency slot, given back when the connection closes (at once if it already has). */
  holdSlot(release: () => void): void {
    if (this.#left.signal.aborted) return release();
    this.#releaseSlot = release;
  }

  forCareId(platformCareId: string): void {
    this.#platformCareId = platformCareId;
  }

  /** The identifier system the one matching Patient was found by (PLATFORM_IDENTIFIER_SYSTEM, or the matched identifier's with any system allowed). */
  matchedBy(system: string | null): void {
    this.#identifierSystem = system;
  }

  forPatient(fhirPatientId: string): void {
    this.#fhirPatientId = fhirPatientId;
  }

  /** An answer without a record: nobody, or several patients, matched. */
  decide(decision: 'not-found' | 'ambiguous'): void {
    this.#decision = decision;
  }

  /** The error the request is answered with (the route's onError hook). */
  failed(code: string): void {
    this.#code = code;
  }

  /** Bytes of the record written to the caller. */
  sent(bytes: number): void {
    this.#bytes += bytes;
  }

  /** Its end line is written (or being written): the caller has gone, or it has been answered. */
  get ended(): boolean {
    return this.#ending;
  }

  /**
   * The `started` line of a record: resolves once it is written (write()
   * returned) and before anything of the record is fetched, with the promise
   * of its sync, which the record awaits before its first byte goes out; its
   * fetches overlap the fdatasync. @throws ERR_API_AUDIT_UNAVAILABLE (the line was not written)
   */
  async writeStarted(): Promise<{ synced: Promise<void> }> {
    const { written, synced } = this.#audit.append(this.#line('started', { decision: 'granted', code: null, status: 200, aborted: false }));
    await written;
    return { synced };
  }

  /**
   * A reply that is not a record ({} or an error): its end line goes to disk
   * before the reply does. Resolves with the error to answer instead when the
   * line cannot be written (counted as that error), else null.
   */
  async endReply(status: number, payload: unknown): Promise<HospitalApiError | null> {
    if (this.#ending) return null;
    if (typeof payload === 'string' || Buffer.isBuffer(payload)) this.#bytes = Buffer.byteLength(payload);
    try {
      await this.#end(status, false);
      return null;
    } catch (err) {
      const error = err instanceof HospitalApiError ? err : new HospitalApiError('ERR_INTERNAL', { detail: 'audit' });
      this.#count('error', error.status, error.code);
      this.#request.log.error(auditFailureLog(error), 'audit line not written: reply replaced');
      return error;
    }
  }

  /**
   * Every page of a record is out but its `closingBytes`: the end line goes to
   * disk first. True when the record may be completed; false when it must not
   * (the caller has gone, or the line could not be written: then it is cut).
   */
  async completeRecord(closingBytes: number): Promise<boolean> {
    if (this.#ending) return false;
    this.#decision = 'granted';
    this.#bytes += closingBytes;
    try {
      await this.#end(200, false);
      return true;
    } catch (err) {
      // Tried once more, as the cut record it has become.
      await this.#cut(err, true);
      return false;
    }
  }

  /** A record failed after its headers went out: the connection is cut so no caller takes a partial record for a whole one. */
  cut(err: unknown): Promise<void> {
    return this.#cut(err, !this.#ending);
  }

  async #cut(err: unknown, writeLine: boolean): Promise<void> {
    this.#code = err instanceof HospitalApiError ? err.code : 'ERR_API_ABORTED';
    this.#decision = 'error';
    this.#request.log.error({ code: this.#code, message: (err as Error).message }, 'record aborted mid-stream');
    this.#raw.destroy();
    if (writeLine) await this.#end(200, true).catch((e: unknown) => this.#count('error', 200, auditCode(e)));
  }

  /**
   * The connection closed: the slot is free; a request that had no end line yet (its caller left) gets one now.
   * A caller that left before anything was answered (mid-upload, while the platform decided, while queued) got
   * no status at all: its line says 499 ERR_API_CALLER_LEFT, as nginx logs a client that closed its request
   * (issue 45: it said 200, the default of a reply never sent); one node:http answered itself (a body not in
   * within REQUEST_TIMEOUT_MS) says that status, 408 ERR_API_REQUEST_TIMEOUT. Once the headers are out, the
   * status is theirs.
   */
  #closed(): void {
    this.#releaseSlot?.();
    this.#releaseSlot = null;
    this.#left.abort(CALLER_LEFT);
    if (this.#ending) return;
    let status = this.#raw.statusCode;
    let aborted = !this.#raw.writableFinished;
    if (!this.#raw.headersSent) {
      // node:http may have answered it itself (408: the body did not arrive in REQUEST_TIMEOUT_MS; 400, 431)
      const answered = clientErrorStatus(this.#request.raw.socket);
      status = answered ?? CALLER_LEFT_STATUS;
      aborted = answered === undefined;
      this.#code = answered === 408 ? 'ERR_API_REQUEST_TIMEOUT' : answered !== undefined ? 'ERR_API_BAD_REQUEST' : 'ERR_API_CALLER_LEFT';
      this.#decision = 'error';
    }
    this.#end(status, aborted).catch((err: Error) => {
      this.#count('error', status, auditCode(err));
      this.#request.log.error(auditFailureLog(err), 'audit line not written');
    });
  }

  /** Writes the end line and, once it is on disk, counts the request. Rejects (counting nothing) when it cannot be written. */
  async #end(status: number, aborted: boolean): Promise<void> {
    this.#ending = true;
    const code = this.#code ?? (aborted ? 'ERR_API_ABORTED' : null);
    const decision = this.#decision ?? decisionFor(code, status);
    await this.#audit.write(this.#line('end', { decision, code, status, aborted }));
    this.#count(decision, status, code);
  }

  /** Counts the request, once, with the outcome the caller got. */
  #count(outcome: AuditDecision, status: number, code: string | null): void {
    if (this.#counted) return;
    this.#counted = true;
    this.#metrics.requests.inc({ route: ROUTE, outcome, status });
    this.#metrics.duration.observe({ route: ROUTE, outcome }, this.#elapsedMs() / 1000);
    if (outcome === 'granted') this.#metrics.recordBytes.observe(this.#bytes);
    if (code && /^ERR_API_(PLATFORM|FHIR)_/.test(code)) {
      this.#metrics.upstreamErrors.inc({ upstream: code.startsWith('ERR_API_PLATFORM') ? 'platform' : 'fhir', code });
    }
  }

  #line(phase: AuditPhase, outcome: Outcome): AuditRecord {
    return {
      time: new Date().toISOString(),
      phase,
      requestId: this.#request.id,
      callerRequestId: callerRequestId(this.#request.headers),
      caller: this.#request.ip,
      platformCareId: this.#platformCareId,
      identifierSystem: this.#identifierSystem,
      fhirPatientId: this.#fhirPatientId,
      decision: outcome.decision,
      code: outcome.code,
      pages: this.stats.pages,
      resources: this.stats.resources,
      bytes: this.#bytes,
      durationMs: Math.round(this.#elapsedMs() * 10) / 10,
      status: outcome.status,
      aborted: outcome.aborted,
    };
  }

  #elapsedMs(): number {
    return Number(process.hrtime.bigint() - this.#start) / 1e6;
  }
}

function decisionFor(code: string | null, status: number): AuditDecision {
  if (code === 'ERR_API_ACCESS_DENIED' || code === 'ERR_API_CALLER_FORBIDDEN' || code === 'ERR_API_UPSTREAM_CREDENTIALS') {
    return 'denied';
  }
  return code === null && status < 400 ? 'granted' : 'error';
}

/** The code of an end line that could not be written. */
function auditCode(err: unknown): string {
  return err instanceof HospitalApiError ? err.code : 'ERR_API_AUDIT_UNAVAILABLE';
}
