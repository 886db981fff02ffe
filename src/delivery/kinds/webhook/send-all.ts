import { sendWebhook, type AttemptResult, type SendContext, type WebhookRequest } from "../../../outbound/send.js";

/**
 * Every URL concurrently. The first success ends the delivery; requests
 * still running are aborted and logged as abandoned.
 */
export async function sendAll(requests: readonly WebhookRequest[], ctx: Omit<SendContext, "signal">): Promise<AttemptResult[]> {
  if (requests.length === 1) return [await sendWebhook(requests[0]!, ctx)];
  const succeeded = new AbortController();
  return Promise.all(
    requests.map(async (request) => {
      const result = await sendWebhook(request, { ...ctx, signal: succeeded.signal });
      if (result.outcome === "success") succeeded.abort();
      return result;
    }),
  );
}
