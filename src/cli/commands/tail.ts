import { toJson } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { setTimeout as delay } from "node:timers/promises";
import {
  DeliveryOrder,
  type DeliveryService,
  DeliverySchema,
  type Delivery,
  type ListDeliveriesRequest,
  type ListDeliveriesResponse,
} from "../../../gen/waypost/v1/delivery_pb.js";
import type { CliContext } from "../context.js";
import { tailLine } from "./delivery-text.js";
import { createDestinationNames } from "./destination-names.js";

type Filter = Pick<ListDeliveriesRequest, "destinationId" | "statuses" | "messageId" | "userId" | "since" | "until">;

/** Most deliveries one poll takes; a full page is followed by another poll at once. */
const pageSize = 500;

/**
 * Follows the finish feed: the server's page token says what this reader has
 * seen, so each finished delivery is printed once, whatever the order in
 * which they commit. Oldest first, like a log. Ends when ctx.signal aborts.
 */
export async function tailDeliveries(
  ctx: CliContext,
  client: Client<typeof DeliveryService>,
  filter: Filter,
  lines: number,
  intervalMs = 1000,
): Promise<void> {
  const names = ctx.json ? undefined : createDestinationNames(ctx);
  const print = async (deliveries: readonly Delivery[]) => {
    // The feed answers newest first.
    for (const d of [...deliveries].reverse()) {
      ctx.out(names ? tailLine(d, await names.nameOf(d.destinationId)) : JSON.stringify(toJson(DeliverySchema, d)));
    }
  };
  const request = { ...filter, order: DeliveryOrder.FINISH_TIME_DESC };
  const first = await client.listDeliveries({ ...request, pageSize: Math.max(lines, 1) }, { signal: ctx.signal });
  if (lines > 0) await print(first.deliveries);
  let pageToken = first.nextPageToken;
  let full = false;
  while (!ctx.signal.aborted) {
    if (!full) {
      const stopped = await delay(intervalMs, false, { signal: ctx.signal }).catch(() => true);
      if (stopped) break;
    }
    let page: ListDeliveriesResponse;
    try {
      page = await client.listDeliveries({ ...request, pageSize, pageToken }, { signal: ctx.signal });
    } catch (error) {
      if (ctx.signal.aborted) break;
      throw error;
    }
    await print(page.deliveries);
    pageToken = page.nextPageToken;
    full = page.deliveries.length === pageSize;
  }
}
