// @ts-check
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BatchRequestSchema, BatchResponseSchema } from "../../dist/gen/waypost/v1/tracking_pb.js";

const placeholder = "@".repeat(24);
const keyPlaceholder = "%".repeat(12);

/** @typedef {ReturnType<typeof trackingClient>} TrackingClient */

/**
 * A TrackingService client over HTTP/2 speaking the Connect protocol with
 * binary protobuf, as a server-side SDK would. The load generator shares the
 * machine with Postgres and the service, so it encodes one template batch
 * once and then only writes fresh messageIds into a copy of its bytes: the
 * server still decodes, validates and stores every call as usual. With
 * `propertyKeys`, the first call of every batch has one more property whose
 * key sendBatch's `propertyKey` writes (a warehouse's new column).
 * @param {string} baseUrl
 * @param {string} writeKey
 * @param {{ propertyKeys?: boolean, headers?: Record<string, string> }} [options] headers: sent with every request (a traceparent, say)
 */
export function trackingClient(baseUrl, writeKey, { propertyKeys = false, headers = {} } = {}) {
  const session = http2.connect(baseUrl);
  session.on("error", () => {});
  /** @type {Map<number, { bytes: Buffer, offsets: number[], keyAt: number }>} */
  const templates = new Map();
  let sequence = 0;

  /** @param {number} size */
  function template(size) {
    let entry = templates.get(size);
    if (entry) return entry;
    const batch = create(BatchRequestSchema, {
      batch: Array.from({ length: size }, (_, i) => ({
        type: {
          case: /** @type {const} */ ("track"),
          value: {
            messageId: placeholder,
            userId: `user-${i % 5000}`,
            event: "Order Completed",
            properties: {
              orderId: String(i),
              total: 42.5,
              currency: "EUR",
              ...(propertyKeys && i === 0 ? { [keyPlaceholder]: 1 } : {}),
            },
            context: { ip: "203.0.113.9" },
          },
        },
      })),
    });
    const bytes = Buffer.from(toBinary(BatchRequestSchema, batch));
    const offsets = [];
    for (let at = bytes.indexOf(placeholder); at >= 0; at = bytes.indexOf(placeholder, at + 1)) offsets.push(at);
    entry = { bytes, offsets, keyAt: propertyKeys ? bytes.indexOf(keyPlaceholder) : -1 };
    templates.set(size, entry);
    return entry;
  }

  return {
    /**
     * Sends one Batch of `size` track calls; resolves with their messageIds once acknowledged.
     * @param {number} size
     * @param {string} [prefix]
     * @param {string} [propertyKey] the extra property's key (with propertyKeys), at most 12 characters
     * @returns {Promise<string[]>}
     */
    sendBatch(size, prefix = "c", propertyKey = "same") {
      const { bytes, offsets, keyAt } = template(size);
      const body = Buffer.from(bytes);
      if (keyAt >= 0) body.write(propertyKey.padEnd(keyPlaceholder.length, "x").slice(0, keyPlaceholder.length), keyAt, "latin1");
      const ids = offsets.map((at) => {
        const id = `${prefix}-${process.pid}-${++sequence}`.padEnd(placeholder.length, "-").slice(0, placeholder.length);
        body.write(id, at, "latin1");
        return id;
      });
      return new Promise((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/waypost.v1.TrackingService/Batch",
          "content-type": "application/proto",
          authorization: `Bearer ${writeKey}`,
          ...headers,
        });
        /** @type {Buffer[]} */
        const chunks = [];
        let status = 0;
        stream.on("response", (headers) => (status = Number(headers[":status"])));
        stream.on("data", (chunk) => chunks.push(chunk));
        stream.on("error", reject);
        stream.on("end", () => {
          const payload = Buffer.concat(chunks);
          if (status !== 200) return reject(new Error(`Batch answered ${status}: ${payload.toString().slice(0, 200)}`));
          const response = fromBinary(BatchResponseSchema, payload);
          if (response.rejected.length > 0) return reject(new Error(`rejected: ${JSON.stringify(response.rejected[0])}`));
          resolve(ids);
        });
        stream.end(body);
      });
    },
    close: () => session.close(),
  };
}
