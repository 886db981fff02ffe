// @ts-check
import { adminToken } from "./service.mjs";

/**
 * One admin RPC in Connect JSON, as curl would send it; resolves with the answer's JSON.
 * @param {string} baseUrl
 * @param {string} method `Service/Method`, as in `SourceService/CreateSource`
 * @param {object} body
 * @returns {Promise<any>}
 */
export async function rpc(baseUrl, method, body, token = adminToken) {
  const response = await fetch(`${baseUrl}/waypost.v1.${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * A source and a destination of it that posts to `webhookUrl`, as the admin API returns them.
 * @param {string} baseUrl
 * @param {string} webhookUrl
 * @param {{ name?: string, enabled?: boolean, secret?: string, batch?: { maxCalls: number, maxBytes?: number, maxWaitMs?: number } }} [options] `batch`: the webhook sends its calls many per POST
 * @returns {Promise<{ source: { id: string, writeKey: string }, destination: { id: string } }>}
 */
export async function createSourceAndDestination(
  baseUrl,
  webhookUrl,
  { name = "bench", enabled = true, secret = "bench-secret", batch } = {},
) {
  const { source } = await rpc(baseUrl, "SourceService/CreateSource", { source: { name } });
  const webhook = batch ? { url: webhookUrl, batch } : { url: webhookUrl };
  const { destination } = await rpc(baseUrl, "DestinationService/CreateDestination", {
    destination: { name, sourceIds: [source.id], enabled, webhooks: [webhook], sharedSecret: secret },
  });
  return { source, destination };
}

/**
 * @param {string} baseUrl
 * @param {string} destinationId
 * @param {boolean} enabled
 */
export async function setEnabled(baseUrl, destinationId, enabled) {
  await rpc(baseUrl, "DestinationService/UpdateDestination", {
    destination: { id: destinationId, enabled },
    updateMask: "enabled",
  });
}
