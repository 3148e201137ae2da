/** Declarative configuration (Kong's kong/db/schema/others/declarative_config.lua): parse into, and export from, the gateway's configuration. */
export { parseDeclarative } from './parse.js';
export { EXPORT_FORMATS, exportDeclarative, kongHashedCredentials, type ExportFormat } from './export.js';
