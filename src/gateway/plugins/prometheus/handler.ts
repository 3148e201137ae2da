/**
 * prometheus (Kong 3.9's kong/plugins/prometheus/handler.lua, PRIORITY 13): no
 * access or header work; its log phase hands each finished request to the
 * gateway's exporter, with what the instance's switches ask for.
 */
import type { CompileEnv, PluginHandler, PluginRunner } from '../types.js';
import type { PrometheusConfig } from './schema.js';

function compile(raw: Readonly<Record<string, unknown>>, env: CompileEnv): PluginRunner {
  const conf = raw as unknown as PrometheusConfig;
  const exporter = env.prometheus;
  return {
    name: 'prometheus',
    log(entry) {
      exporter?.log(conf, entry);
    },
  };
}

export const prometheusHandler: PluginHandler = { name: 'prometheus', compile };
