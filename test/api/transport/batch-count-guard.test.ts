import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { BatchRequestSchema, TrackRequestSchema } from "../../../gen/waypost/v1/tracking_pb.js";
import { createBatchCountScanner, guardBody } from "../../../src/api/transport/batch-count-guard.js";

/** A batch of `count` realistic calls: nested context, arrays, strings full of JSON punctuation. */
function batch(count: number) {
  return create(BatchRequestSchema, {
    batch: Array.from({ length: count }, (_, i) => ({
      type: {
        case: "track" as const,
        value: {
          userId: `user-${i}`,
          event: 'Clicked "Buy", then [OK] {x}\\',
          properties: { items: [1, "a,b", { nested: ["]", "}"] }], note: "comma, bracket ] brace }" },
          context: { library: { name: "analytics-node", version: "3.1.0" } },
        },
      },
    })),
  });
}

/** Feeds the bytes in small uneven chunks, as a socket would. */
function scan(bytes: Uint8Array, limit: number): void {
  const scanner = createBatchCountScanner(limit);
  for (let i = 0; i < bytes.length; i += 7) scanner.push(bytes.subarray(i, i + 7));
}

test.each([
  ["binary", (count: number) => toBinary(BatchRequestSchema, batch(count))],
  ["JSON", (count: number) => new TextEncoder().encode(toJsonString(BatchRequestSchema, batch(count)))],
  [
    "JSON with spaces",
    (count: number) => new TextEncoder().encode(`  ${toJsonString(BatchRequestSchema, batch(count), { prettySpaces: 2 })}`),
  ],
])("%s: a batch at the limit passes, one message more is refused", (_name, encode) => {
  expect(() => scan(encode(50), 50)).not.toThrow();
  expect(() => scan(encode(51), 50)).toThrow(/over the limit of 50/);
  expect(() => scan(encode(0), 50)).not.toThrow();
});

test("other tracking requests count as at most one", () => {
  const track = create(TrackRequestSchema, { track: { userId: "u", event: "e", properties: { list: [1, 2, 3, 4, 5] } } });
  expect(() => scan(toBinary(TrackRequestSchema, track), 1)).not.toThrow();
  expect(() => scan(new TextEncoder().encode(toJsonString(TrackRequestSchema, track)), 1)).not.toThrow();
});

test("enveloped bodies are counted per message; compressed envelopes are left to decompression", async () => {
  const message = toBinary(BatchRequestSchema, batch(30));
  const envelope = (flags: number) => {
    const out = new Uint8Array(5 + message.length);
    out[0] = flags;
    new DataView(out.buffer).setUint32(1, message.length);
    out.set(message, 5);
    return out;
  };
  async function drain(body: Uint8Array) {
    async function* chunks() {
      for (let i = 0; i < body.length; i += 11) yield body.subarray(i, i + 11);
    }
    let size = 0;
    for await (const chunk of guardBody(chunks(), true, 20)) size += chunk.length;
    return size;
  }
  await expect(drain(envelope(0))).rejects.toThrow(/over the limit of 20/);
  expect(await drain(envelope(1))).toBe(message.length + 5);
});
