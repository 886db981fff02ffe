import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { brokerDelivery } from "../broker-kind.js";
import { defineKind, type DestinationOf, type KindSettings } from "../kind.js";
import { createNatsPublisher } from "./nats-publisher.js";
import { type NatsSettings, natsDefaults, natsSettingsView, validateNatsSettings } from "./nats-settings.js";

const settings: KindSettings<NatsSettings> = {
  fields: [{ path: "nats", name: "nats", describe: "NATS settings", moves: true, given: (input) => input.nats !== undefined }],
  read(input, { paths, current, guard }) {
    if (current && !paths.has("nats")) return current;
    const given = input.nats;
    return validateNatsSettings(
      "destination.nats",
      { servers: given?.servers ?? [], subject: given?.subject, token: given?.token, user: given?.user, password: given?.password },
      guard,
      current,
    );
  },
  toProto: (settings) => ({ nats: natsSettingsView(settings) }),
  toRow: (settings) => ({ nats: settings }),
  // A row without settings (none is stored so) reads as no servers: publishes fail naming it.
  fromRow: (row) => row.nats ?? { servers: [], subject: natsDefaults.subject, token: "", user: "", password: "" },
};

/**
 * NATS JetStream: each call is published with `Nats-Msg-Id` = its message
 * id, delivered on the stream's acknowledgement (docs/nats.md).
 * One connection per destination and settings revision.
 */
export const natsKind = defineKind({
  name: "nats",
  label: "NATS",
  proto: DestinationKind.NATS,
  settings,
  createDelivery: (context) =>
    brokerDelivery<NatsSettings, DestinationOf<"nats", NatsSettings>>(context, {
      settingsOf: (destination) => destination.nats,
      createPublisher: (settings, publisherContext) => createNatsPublisher({ ...settings, ...publisherContext }),
      targetOf: (settings) => settings.servers.join(","),
      system: "nats",
    }),
});
