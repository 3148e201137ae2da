#!/usr/bin/env node
// Entry point of the hospital-api CLI: runs the compiled code in dist/ (`npm run build`,
// which `npm ci` runs through the `prepare` script). Node's on-disk compile cache
// (node:module enableCompileCache, Node >= 22.1) keeps V8's compiled code between runs.
import module from 'node:module';

module.enableCompileCache?.();
try {
  await import('../dist/cli.js');
} catch (err) {
  if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli.js')) {
    process.stderr.write('hospital-api: the compiled code is missing (dist/cli.js); run `npm run build` first.\n');
    process.exit(70);
  }
  throw err;
}
