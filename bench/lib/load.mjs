import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { TrackingService } from "../../dist/gen/waypost/v1/tracking_pb.js";

/** A TrackingService client over HTTP/2 (binary protobuf), as a server-side SDK would use it. */
export function trackingClient(baseUrl, writeKey) {
  const transport = createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true });
  const client = createClient(TrackingService, transport);
  const headers = { authorization: `Bearer ${writeKey}` };
  let sequence = 0;
  return {
    /** Sends one Batch of `size` track calls; resolves with their messageIds once acknowledged. */
    async sendBatch(size, prefix = "c") {
      const ids = [];
      const batch = [];
      for (let i = 0; i < size; i++) {
        const messageId = `${prefix}-${process.pid}-${++sequence}`;
        ids.push(messageId);
        batch.push({
          type: {
            case: "track",
            value: {
              messageId,
              userId: `user-${sequence % 5000}`,
              event: "Order Completed",
              properties: { orderId: String(sequence), total: 42.5, currency: "EUR" },
              context: { ip: "203.0.113.9" },
            },
          },
        });
      }
      const response = await client.batch({ batch }, { headers });
      if (response.rejected.length > 0) throw new Error(`rejected: ${JSON.stringify(response.rejected[0])}`);
      return ids;
    },
  };
}
