/**
 * Prometheus metrics of the Hospital API (prom-client), served on their own
 * listener (METRICS_LISTEN, loopback by default) so the public port never
 * exposes them. One registry per app, so tests can run several apps.
 */
import { X509Certificate } from 'node:crypto';
import { basename } from 'node:path';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { certificateLifetimes } from '../../install-dir/certificate-lifetimes.js';
import { latestSignedAcceptance, type LatestAcceptance } from '../../install-dir/reports.js';
import { installPaths } from '../../install-dir/layout.js';

export interface ApiMetrics {
  registry: Registry;
  requests: Counter<'route' | 'outcome' | 'status'>;
  duration: Histogram<'route' | 'outcome'>;
  pages: Counter;
  resources: Counter;
  upstreamErrors: Counter<'upstream' | 'code'>;
  /** Bytes of each granted record sent to the caller (dashboards: record sizes). */
  recordBytes: Histogram;
  /** POST /api/patients waiting for a slot (src/api/request/admission.ts). */
  queueDepth: Gauge;
  /** Time each POST /api/patients waited for a slot, by outcome (admitted, queue-full, timeout, left). */
  queueWait: Histogram<'outcome'>;
}

/**
 * prom-client's default metrics include three gauges named `_total`
 * (nodejs_active_{handles,requests,resources}_total), which `promtool check
 * metrics` flags ("non-counter metrics should not have _total suffix", per
 * prometheus/client_golang prometheus/testutil/promlint). The same counts stay
 * available by type (nodejs_active_handles{type}, …): sum() them.
 */
const GAUGES_NAMED_TOTAL = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Where the certificate gauges come from. */
export interface CertificateSources {
  /**
   * The install directory the API runs from (HOSPITAL_API_DIR, set by the
   * native runtime and the systemd units): its CA, gateway and record-signing
   * certificates, read on each scrape exactly as `hospital-api status` reads
   * them (certificateLifetimes), so a `cert renew` shows at the next scrape.
   */
  installDir?: string | null;
  /** FHIR_CA_FILE as the API holds it now (reloaded on SIGHUP): the CA it trusts for the gateway (`fhir-ca-trusted`). */
  fhirCaPem?: () => string | null;
  /** The audit log's state as of its last write or /api/ready probe (hospital_api_audit_writable). */
  auditOk?: () => boolean;
}

interface CertificateExpiry {
  name: string;
  notAfterMs: number;
}

async function certificateExpiries(sources: CertificateSources): Promise<CertificateExpiry[]> {
  const now = Date.now();
  const list: CertificateExpiry[] = [];
  if (sources.installDir) {
    try {
      for (const c of certificateLifetimes(installPaths(sources.installDir), now)) {
        list.push({ name: c.name, notAfterMs: Date.parse(c.validTo) });
      }
    } catch {
      // A damaged certificate file: its series is absent (alert on absent()); `hospital-api status` names the file.
    }
  }
  const trusted = sources.fhirCaPem?.() ?? null;
  if (trusted) {
    try {
      const notAfterMs = new X509Certificate(trusted).validToDate.getTime();
      list.push({ name: 'fhir-ca-trusted', notAfterMs });
    } catch {
      // The API refused to start on an unreadable FHIR_CA_FILE, so this does not happen.
    }
  }
  return list;
}

export function createMetrics(certificates: CertificateSources = {}): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hospital_api_' });
  for (const name of GAUGES_NAMED_TOTAL) registry.removeSingleMetric(`hospital_api_${name}`);
  // Time left on each certificate (issue 15), computed at scrape time. `certificate` is ca,
  // gateway, record-signer, audit-seal (the install's files) or fhir-ca-trusted (what this process trusts
  // for the gateway: after a CA change it differs from `ca` until the API reloads).
  let latest: Promise<CertificateExpiry[]> | null = null;
  const scrape = (): Promise<CertificateExpiry[]> => (latest ??= certificateExpiries(certificates).finally(() => { latest = null; }));
  // In seconds, Prometheus's base unit (prometheus/docs docs/practices/naming.md): it replaces
  // hospital_api_certificate_days_left, which promtool check metrics flagged.
  new Gauge({
    name: 'hospital_api_certificate_remaining_seconds',
    help: 'Whole seconds until each certificate expires (negative once expired): ca, gateway, record-signer, audit-seal, fhir-ca-trusted',
    labelNames: ['certificate'],
    registers: [registry],
    async collect() {
      this.reset();
      const now = Date.now();
      for (const c of await scrape()) this.set({ certificate: c.name }, Math.floor((c.notAfterMs - now) / 1000));
    },
  });
  new Gauge({
    name: 'hospital_api_certificate_expiry_timestamp_seconds',
    help: 'When each certificate expires (notAfter), as Unix time',
    labelNames: ['certificate'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const c of await scrape()) this.set({ certificate: c.name }, Math.floor(c.notAfterMs / 1000));
    },
  });
  // Scheduled acceptance (issue 46): the newest signed record in the install's reports/, read at
  // each scrape, so a REJECTED record alerts at the next scrape (HospitalApiAcceptanceRejected) and a
  // schedule that stopped writing shows its age (HospitalApiAcceptanceStale). Absent without a record:
  // the `record` label (the record's file name) is what makes it absent (an unlabelled gauge reads 0).
  const installDir = certificates.installDir;
  if (installDir) {
    const reports = installPaths(installDir).reports;
    // read once per scrape for both gauges (prom-client collects them together), as the certificates are
    let newest: Promise<LatestAcceptance | null> | null = null;
    const acceptance = (): Promise<LatestAcceptance | null> =>
      (newest ??= Promise.resolve().then(() => latestSignedAcceptance(reports)).finally(() => { newest = null; }));
    new Gauge({
      name: 'hospital_api_acceptance_result',
      help: 'Result of the newest signed acceptance record (its file name in `record`): 1 accepted, 0 rejected',
      labelNames: ['record'],
      registers: [registry],
      async collect() {
        this.reset();
        const latestRecord = await acceptance();
        if (latestRecord) this.set({ record: basename(latestRecord.file) }, latestRecord.accepted ? 1 : 0);
      },
    });
    new Gauge({
      name: 'hospital_api_acceptance_last_run_timestamp_seconds',
      help: 'When the checks of the newest signed acceptance record (its file name in `record`) ran, as Unix time',
      labelNames: ['record'],
      registers: [registry],
      async collect() {
        this.reset();
        const latestRecord = await acceptance();
        if (latestRecord) this.set({ record: basename(latestRecord.file) }, Math.floor(latestRecord.testedAtMs / 1000));
      },
    });
  }
  const auditOk = certificates.auditOk;
  if (auditOk) {
    new Gauge({
      name: 'hospital_api_audit_writable',
      help: 'Whether the audit log could be written at its last write or /api/ready probe (1) or not (0: no patient data is sent)',
      registers: [registry],
      collect() {
        this.set(auditOk() ? 1 : 0);
      },
    });
  }
  return {
    registry,
    requests: new Counter({
      name: 'hospital_api_requests_total',
      help: 'Requests by route, outcome (audit decision, or ok/error) and status',
      labelNames: ['route', 'outcome', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'hospital_api_request_duration_seconds',
      help: 'Request latency by route and outcome',
      labelNames: ['route', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    pages: new Counter({
      name: 'hospital_api_fhir_pages_total',
      help: 'FHIR $everything pages fetched',
      registers: [registry],
    }),
    resources: new Counter({
      name: 'hospital_api_fhir_resources_total',
      help: 'FHIR resources returned to callers (after de-duplication)',
      registers: [registry],
    }),
    upstreamErrors: new Counter({
      name: 'hospital_api_upstream_errors_total',
      help: 'Failed upstream calls by upstream (platform, fhir) and error code',
      labelNames: ['upstream', 'code'],
      registers: [registry],
    }),
    recordBytes: new Histogram({
      name: 'hospital_api_record_size_bytes',
      help: 'Size of each granted patient record sent, in bytes',
      // 1 KiB to 1 GiB, x4 each step.
      buckets: [1024, 4096, 16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864, 268_435_456, 1_073_741_824],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'hospital_api_admission_queue_depth',
      help: 'Patient requests (access granted) waiting for one of the MAX_CONCURRENT_REQUESTS slots',
      registers: [registry],
    }),
    queueWait: new Histogram({
      name: 'hospital_api_admission_wait_seconds',
      help: 'Time each patient request waited for a slot, by outcome: admitted, queue-full, timeout, left',
      labelNames: ['outcome'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
  };
}
