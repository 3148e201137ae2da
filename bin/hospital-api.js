#!/usr/bin/env node
// Entry point of the hospital-api CLI: checks the Node.js that runs it (node-check.cjs:
// exit 3 with one line on a Node it cannot run on), then runs the compiled code in dist/
// (`npm run build`, which `npm ci` runs through the `prepare` script). Node's on-disk
// compile cache (node:module enableCompileCache, Node >= 22.1) keeps V8's compiled code
// between runs.
import module from 'node:module';

module.createRequire(import.meta.url)('./node-check.cjs').check();
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
