import type { Command } from 'commander';
import { isLoopback } from '../util/listen-address.js';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface ServeOptions extends GlobalOptions {
  host?: string;
  port?: string;
  envFile?: string;
  reloadStatus?: string;
  anyIdentifierSystem?: boolean;
}

/**
 * `hospital-api serve`: run the Hospital API (POST /api/patients, GET /api/health-check,
 * GET /api/ready) until SIGTERM/SIGINT. Configuration: see docs/api.md.
 */
export function register(program: Command): void {
  program
    .command('serve')
    .description(SUMMARIES.serve)
    .option('--host <address>', 'address to listen on (env HOST, default 0.0.0.0)')
    .option('--port <port>', 'port to listen on (env PORT, default 9000)')
    .option('--env-file <file>', 'settings file read under the environment (default .env in the working directory)')
    .option('--any-identifier-system', "let a care id match an identifier of any system (only when PLATFORM_IDENTIFIER_SYSTEM cannot be set: another patient's hospital number or national id could match)")
    .option('--reload-status <file>', 'on SIGHUP, reread FHIR_API_KEY and write the outcome here (consumer rotate-key)')
    .action(
      action<ServeOptions>('serve', async (options, io) => {
        // Loaded lazily so `--help` stays fast.
        const { loadConfig } = await import('../api/server/config.js');
        const { startApi, stopOnSignals } = await import('../api/server/server.js');
        const flags = { host: options.host, port: options.port, envFile: options.envFile, anyIdentifierSystem: options.anyIdentifierSystem };
        const config = loadConfig(flags);
        const logger = config.logLevel === 'silent' ? false : { level: config.logLevel, stream: process.stderr };
        // Configuration warnings come before the listening lines, so a reader (or a test) that
        // waits for 'listening on' has them all.
        if (config.identifierSystem === null) {
          io.warn('PLATFORM_IDENTIFIER_SYSTEM is not set and any identifier system may match: a care id equal to another patient\'s hospital number or national id returns that patient');
        }
        if (config.allowedCallers === null) {
          io.warn('ALLOWED_CALLERS is empty: every caller may reach POST /api/patients (restrict it in production)');
        }
        if (config.platformApiUrl.protocol === 'http:' && !isLoopback(config.platformApiUrl.hostname)) {
          io.warn('PLATFORM_API_URL uses plain http: tokens cross the network unencrypted');
        }
        if (config.metricsListen && !isLoopback(config.metricsListen.host)) {
          io.warn(`METRICS_LISTEN ${config.metricsListen.host} is not loopback: metrics are reachable from the network`);
        }
        const running = await startApi(config, { logger });
        // Never the key or a token: only addresses.
        io.log(`hospital-api serve: listening on ${running.url}`);
        io.log(`  FHIR base ${config.fhirBaseUrl.href}, platform ${config.platformApiUrl.href}`);
        io.log(`  identifier system ${config.identifierSystem ?? 'any (--any-identifier-system)'}`);
        io.log(`  audit log ${config.auditLog}; metrics ${running.metricsUrl ? `${running.metricsUrl}/metrics` : 'off'}`);
        const { reloadKeyOnSignal } = await import('../api/fhir/key-reload.js');
        reloadKeyOnSignal(running, flags, options.reloadStatus, (t) => io.log(t));
        await stopOnSignals(running, (signal) => io.log(`hospital-api serve: ${signal}, finishing in-flight requests`));
        io.log('hospital-api serve: stopped');
        return 0;
      }),
    );
}
