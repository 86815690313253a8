import {
  createAccount, createChannel, createMetrics, generateSigningSecret, inRolledBackTransaction, newId, newPerson, postMessage, randomToken, sealWebhookSecret, warmUpEmail, type Actor, type Deps,
} from '@teamchat/core';
import { webhookEndpoints, type Db } from '@teamchat/db';
import { Dispatcher } from './dispatcher';
import { unrelayedEventsRead } from './fan-out';
import { fanOutAndHandOver } from './fanout-worker';
import type { AttemptOutcome } from './pipeline';
import { FANOUT_BATCH } from './queues';
import { BoundTransport, startWarmUpReceiver } from './warm-up-receiver';

/**
 * Deliveries the worker makes at warm-up through the engine's real path, before it is ready:
 * posts, the relay's read, the fan-out's write, the dispatcher (lanes, in-flight slots in Redis),
 * the pipeline's claim, charge, prepare and send, and the shared close, all on real rows, so that
 * their first runs (each function compiled to bytecode, its inline caches meeting the shapes real
 * rows have, a dispatcher's first asks, claims and closes) come before the first real delivery.
 * 200 runs are too few for V8's optimising compiler: that compiling still comes after ready. The
 * attempts on rows held in memory (warm-up-attempts.ts) leave these paths to the first real
 * deliveries (docs/performance.md "Warm-ups that run the real paths").
 */
export const WARM_UP_DELIVERIES = 200;
/** Deliveries under way at once, at most (as a steady low rate keeps a few on the wire). */
const UNDER_WAY = 8;
/**
 * The longest the step's deliveries may take in all (measured: 1.4-2.2 s on a slow 2-core host);
 * past it the step fails and the process becomes ready without the rest (Warmth: a warm-up never
 * keeps a process out of service).
 */
const OUTCOMES_WAIT_MS = 10_000;

/**
 * Makes `deliveries` deliveries in ONE transaction that is rolled back at the end, as the API's
 * warm-up posts are: an account of its own (a new person as owner), a channel, an endpoint whose
 * URL names the warm-up's receiver (warm-up-receiver.ts), and `deliveries` posts, each fanned out,
 * sent and recorded by a dispatcher of the warm-up's own over that transaction. So nothing is
 * ever committed and no other connection sees these rows; the relay's read and the fan-out are
 * limited to the warm-up's account, so no other account's unrelayed events are read or locked.
 * - Every POST goes to the warm-up's receiver on loopback, whatever the URL guard vetted: the
 *   warm-up's transport sends nowhere else. The guard runs with the receiver's loopback literal
 *   exempt for the warm-up only (its own copy of the configuration).
 * - The limits are off for it (no call unit is charged in Redis). Its in-flight slots are taken
 *   in Redis under the warm-up account's id, as every attempt's are, and given back when its
 *   dispatcher closes (a slot left by a crash expires after the claim time; the account's demand
 *   entry, as every ask's, within a second).
 * - Its metrics go to a registry of its own: no delivery of the warm-up is counted.
 * - Its transaction is inRolledBackTransaction's: a lock waited for over a second (a table held by
 *   another transaction) fails the step, and the process goes on to be ready.
 * Answers how many deliveries were recorded delivered; fewer than asked fails the step.
 */
export async function warmUpDeliveries(deps: Deps, deliveries = WARM_UP_DELIVERIES): Promise<number> {
  const receiver = await startWarmUpReceiver(() => 200);
  const transport = new BoundTransport(deps.config, receiver.target);
  // The password is hashed before the transaction opens (scrypt must not hold a connection idle).
  const owner = await newPerson(warmUpEmail(), randomToken(32));
  try {
    const delivered = await inRolledBackTransaction(deps.database.db, async (tx) => {
      const account = await createAccount(tx, { plan: 'scale', owner });
      const accountId = account.account_id;
      const actor: Actor = {
        principal: { via: 'api_key', id: newId('credential'), userId: account.owner.user_id, accountId, identityId: account.owner.identity_id, readOnly: false },
        accountId, userId: account.owner.user_id, identityId: account.owner.identity_id, role: 'owner', scopes: new Set(),
      };
      const channel = await createChannel(tx, { actor, name: 'warm-up' });
      await tx.insert(webhookEndpoints).values({
        id: newId('webhook'), accountId, createdByUserId: account.owner.user_id, createdVia: 'api_key',
        url: `https://127.0.0.1:${receiver.port}/warm-up`, events: ['message.posted'], allChannels: true, payload: 'pointers',
        enabled: true, enabledAt: new Date(Date.now() - 60_000), secretEnc: sealWebhookSecret(deps.config, generateSigningSecret()),
      });
      const warm: Deps = {
        ...deps,
        config: { ...deps.config, limitsEnabled: false, webhookAllowedHosts: [...deps.config.webhookAllowedHosts, '127.0.0.1'] },
        database: { ...deps.database, db: tx as unknown as Db },
        metrics: createMetrics(),
      };
      let settled = 0;
      let recorded = 0;
      let wake: (() => void) | null = null;
      const counted = (outcome: AttemptOutcome) => {
        settled += 1;
        if (outcome.kind === 'done' && outcome.status === 'delivered') recorded += 1;
        wake?.();
      };
      const deadline = Date.now() + OUTCOMES_WAIT_MS;
      const settledTo = async (n: number) => {
        while (settled < n) {
          if (Date.now() > deadline) throw new Error(`warm-up deliveries: ${settled} outcomes in ${OUTCOMES_WAIT_MS} ms, ${n} wanted by now`);
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 50);
          });
        }
      };
      const dispatcher = new Dispatcher(warm, transport, counted);
      let handed = 0;
      try {
        // One post a fan-out, as the relay fans a post out by itself at a low rate: the per-batch
        // code (fan-out plan and write, the dispatcher's submit, the pipeline's claim and charge)
        // then runs once per delivery (with two posts a fan-out it ran half as often, and the
        // first 10 s's p99 was lower in only 3 of 5 pairs: docs/performance.md "Warm-ups that run
        // the real paths").
        for (let posted = 0; posted < deliveries; posted += 1) {
          await postMessage(tx, { actor, channelId: channel.id, text: `warm-up message ${posted}: an ordinary line of chat` });
          const read = await unrelayedEventsRead(tx, FANOUT_BATCH, [accountId]);
          handed += (await fanOutAndHandOver(warm, dispatcher, read.map((r) => r.id), read)).deliveries;
          await settledTo(handed - UNDER_WAY);
        }
        await settledTo(handed);
      } finally {
        await dispatcher.close();
      }
      return recorded;
    });
    if (delivered < deliveries) throw new Error(`warm-up deliveries: ${delivered} of ${deliveries} delivered`);
    return delivered;
  } finally {
    await transport.close();
    await receiver.close();
  }
}
