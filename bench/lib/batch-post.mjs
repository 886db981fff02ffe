// @ts-check
import { createHmac } from "node:crypto";
import { Pool as HttpPool } from "undici";

/**
 * What a batched webhook sends, with nothing of Waypost's in between: calls'
 * stored bodies as one `{"batch":[...]}` POST to the sink's /batch, signed
 * with HMAC-SHA1 as the service signs (the bare batch loops' shared sender).
 * @param {string} sinkUrl
 * @param {number} connections keep-alive connections to the sink
 */
export function batchPoster(sinkUrl, connections) {
  const http = new HttpPool(sinkUrl, { connections, keepAliveTimeout: 60_000 });
  return {
    /**
     * Posts the bodies as one batch; throws unless the sink answers 200.
     * @param {string[]} payloads
     */
    async post(payloads) {
      const body = `{"batch":[${payloads.join(",")}]}`;
      const signature = createHmac("sha1", "bench-secret").update(body, "utf8").digest("hex");
      const headers = { "content-type": "application/json", "user-agent": "Waypost/1.0", "x-signature": signature };
      const response = await http.request({ path: "/batch", method: "POST", headers, body });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`sink answered ${response.statusCode}`);
    },
    close: () => http.close(),
  };
}
