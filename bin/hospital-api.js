#!/usr/bin/env node
// Entry point of the hospital-api CLI. The sources are TypeScript; tsx compiles
// them on load (cached on disk), so there is no build step to forget or go stale.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
