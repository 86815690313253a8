import type { Deps } from '../../context';
import type { Actor } from '../../principal';

/** What the endpoint use cases read besides the transaction: config, clock, and the caller. */
export interface EndpointCall {
  deps: Pick<Deps, 'config' | 'now'>;
  actor: Actor;
}
