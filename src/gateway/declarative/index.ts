/** Declarative configuration (kong.md §3): parse into, and export from, the gateway's configuration. */
export { parseDeclarative } from './parse.js';
export { exportDeclarative } from './export.js';
