import { randomUUID } from "node:crypto";
import type { Clock } from "../../../clock.js";
import type { AttemptResult } from "../../../db/job-table/index.js";
import type { WebhookRequest } from "../../../outbound/send.js";
import type { StoredWebhookBatch } from "./batch-settings.js";
import { createHeldBatches, type HeldCall } from "../held-batch.js";
import { batchWebhookId, halves, isTooLarge, splitNote } from "./batch-split.js";
import { signatureHeaders, targetOf } from "./prepare.js";
import type { StoredWebhook, WebhookSettings } from "./settings.js";

/** Sends one request of a destination (through its HTTP client) and classifies the outcome. */
export type BatchSend = (destinationId: string, request: WebhookRequest) => Promise<AttemptResult>;

interface Waiting {
  deliveryId: string;
  body: string;
  /** The attempts of POSTs that carried it and were refused as too large (then split). */
  attempts: AttemptResult[];
}

type Call = HeldCall<Waiting, AttemptResult[]>;

/** What one URL's batch is sent with: those of the settings revision its calls came with. */
interface BatchTarget {
  destinationId: string;
  urlIndex: number;
  webhook: StoredWebhook & { batch: StoredWebhookBatch };
  settings: WebhookSettings;
}

export interface WebhookBatcher {
  /**
   * Adds a call (its delivery's id and body) to its URL's batch; resolves
   * with the attempts of the POSTs that carried it: one, or more when a
   * batch was refused as too large and split.
   */
  add(
    destinationId: string,
    settings: WebhookSettings,
    webhook: StoredWebhook & { batch: StoredWebhookBatch },
    call: { deliveryId: string; body: string },
  ): Promise<AttemptResult[]>;
  /** Sends the batches whose first call has waited max_wait_ms. */
  tick(): void;
  /** Sends every batch now. */
  flush(): void;
  /** Sends every batch and waits for their answers. */
  close(): Promise<void>;
}

/**
 * Batched webhooks: calls for a batched URL wait here (held-batch.ts) until
 * their batch holds max_calls, until one more would make the body larger
 * than max_bytes, or until max_wait_ms after the first; then one POST
 * carries `{"batch":[...]}`, each element exactly the body a single POST
 * would have carried. Its outcome is every call's: each gets the same
 * attempt, with the same `batch` ref; except that a batch the receiver
 * refuses as too large is split (batch-split.ts).
 */
export function createWebhookBatcher(options: { clock: Clock; send: BatchSend }): WebhookBatcher {
  const { clock } = options;
  const held = createHeldBatches<Waiting, BatchTarget, AttemptResult[]>({
    clock,
    send: (target, calls) => post(target, calls),
    // Settings moved on (a new revision): what waits goes with the settings it came with.
    sameContext: (a, b) => a.webhook === b.webhook,
    // `{"batch":[` and `]}`, and a comma between two calls.
    framing: { around: 12, between: 1 },
  });

  /**
   * POSTs `calls` as one batch. Refused as too large, the batch is sent
   * again in two halves, one after the other, down to single calls: each
   * call's attempts are every POST that carried it.
   */
  async function post(batch: BatchTarget, calls: Call[]): Promise<void> {
    const attemptedAt = clock.now();
    let body = "";
    let result: AttemptResult;
    try {
      body = `{"batch":[${calls.map((c) => c.item.body).join(",")}]}`;
      const id = batchWebhookId(
        batch.destinationId,
        calls.map((c) => c.item.deliveryId),
      );
      const headers = batchHeaders(batch.settings, batch.webhook, id, attemptedAt, body);
      const { urlIndex, webhook } = batch;
      result = await options.send(batch.destinationId, { urlIndex, url: webhook.url, target: targetOf(webhook).url, headers, body });
    } catch (error) {
      // Sending reports failures as attempts; should it throw, the calls are retried rather than held forever.
      result = notSent(batch, attemptedAt, error);
    }
    const ref = { id: randomUUID(), calls: calls.length };
    if (calls.length > 1 && isTooLarge(result)) {
      const refused: AttemptResult = { ...result, error: splitNote(result, calls.length, Buffer.byteLength(body)) };
      // One attempt object per call: the loop sets each delivery's own
      // revision and body sent on it in place, so calls must not share one.
      for (const call of calls) call.item.attempts.push({ ...refused, batch: ref });
      for (const part of halves(calls)) await post(batch, part);
      return;
    }
    for (const call of calls) call.resolve([...call.item.attempts, { ...result, batch: ref }]);
  }

  return {
    add(destinationId, settings, webhook, { deliveryId, body }) {
      const urlIndex = settings.webhooks.indexOf(webhook);
      // By position too: two webhooks of a destination may name one URL.
      const key = `${destinationId} ${urlIndex} ${webhook.url}`;
      const target: BatchTarget = { destinationId, urlIndex, webhook, settings };
      return held.add(key, target, webhook.batch, { deliveryId, body, attempts: [] }, Buffer.byteLength(body));
    },
    tick: () => held.tick(),
    flush: () => held.flush(),
    close: () => held.close(),
  };
}

/** A POST that threw instead of reporting its failure: retried, as a connection error would be. */
function notSent(batch: BatchTarget, attemptedAt: Date, error: unknown): AttemptResult {
  return {
    urlIndex: batch.urlIndex,
    url: batch.webhook.url,
    attemptedAt,
    outcome: "retryable",
    statusCode: null,
    error: `batch not sent: ${String(error)}`,
    latencyMs: 0,
    responseBody: null,
  };
}

/**
 * The headers of a batch POST. A batch has no single message id or trace
 * context: webhook-id is the batch's own id (`id`, derived from its calls:
 * batch-split.ts); the calls carry their messageIds.
 */
export function batchHeaders(
  settings: WebhookSettings,
  webhook: StoredWebhook,
  id: string,
  now: Date,
  body: string,
): Record<string, string> {
  return { ...targetOf(webhook).headers, ...signatureHeaders(id, settings, now, body) };
}

/** A webhook whose calls go in batches. */
export function isBatched(webhook: StoredWebhook): webhook is StoredWebhook & { batch: StoredWebhookBatch } {
  return webhook.batch !== undefined;
}
