/**
 * Sets the authenticated consumer and Kong's consumer headers upstream
 * (Kong's set_consumer and `anonymous` in kong/plugins/key-auth/handler.lua), shared by the auth plugins.
 */
import type { Consumer } from '../model/types.js';
import type { CompileEnv, RequestState } from './types.js';

export function setConsumer(state: RequestState, consumer: Consumer, credentialId: string | null): void {
  state.consumer = consumer;
  state.credentialId = credentialId;
  state.setUpstreamHeader('x-consumer-id', consumer.id);
  state.setUpstreamHeader('x-consumer-custom-id', consumer.custom_id);
  state.setUpstreamHeader('x-consumer-username', consumer.username);
  if (credentialId !== null) {
    state.authenticated = true;
    state.setUpstreamHeader('x-credential-identifier', credentialId);
    state.setUpstreamHeader('x-anonymous-consumer', null);
  } else {
    state.setUpstreamHeader('x-credential-identifier', null);
    state.setUpstreamHeader('x-anonymous-consumer', 'true');
  }
}

/** The configured anonymous consumer (by id or username), or undefined. */
export function findAnonymous(env: CompileEnv, anonymous: string): Consumer | undefined {
  return env.consumerById.get(anonymous) ?? env.consumerByUsername.get(anonymous);
}

export function anonymousMissing(anonymous: string) {
  return { status: 500, message: `anonymous consumer ${anonymous} is configured but doesn't exist` };
}
