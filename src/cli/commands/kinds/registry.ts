import type { Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { descriptorOfProto, type KindName } from "../../../delivery/kinds/descriptors.js";
import type { KindFlags } from "../destination-flag-types.js";
import { amqpFlags } from "./amqp.js";
import { integrationFlags } from "./integration.js";
import { lakeFlags } from "./lake.js";
import { natsFlags } from "./nats.js";
import { postgresFlags } from "./postgres.js";
import { webhookFlags } from "./webhook.js";

// The CLI's kinds: one file each in this folder, one entry here.

/** Each kind's flags, by kind name: a kind without an entry does not compile. */
export const kindFlags: Record<KindName, KindFlags> = {
  webhook: webhookFlags,
  postgres: postgresFlags,
  amqp: amqpFlags,
  nats: natsFlags,
  integration: integrationFlags,
  lake: lakeFlags,
};

/** The flags of a destination's kind (unspecified reads as webhooks, as the server treats it). */
export function kindFlagsOf(destination: Pick<Destination, "kind">): KindFlags {
  return kindFlags[descriptorOfProto(destination.kind).name];
}
