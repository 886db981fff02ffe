import { DestinationKind } from "../../../../gen/waypost/v1/destination_pb.js";
import { maskUrlPassword } from "../broker-address.js";
import { brokerDelivery } from "../broker-kind.js";
import { defineKind, type DestinationOf, type KindSettings } from "../kind.js";
import { createAmqpPublisher } from "./amqp-publisher.js";
import { type AmqpSettings, amqpDefaults, amqpSettingsView, validateAmqpSettings } from "./amqp-settings.js";

const settings: KindSettings<AmqpSettings> = {
  fields: [{ path: "amqp", name: "amqp", describe: "AMQP settings", moves: true, given: (input) => input.amqp !== undefined }],
  read(input, { paths, current, guard }) {
    if (current && !paths.has("amqp")) return current;
    const given = input.amqp;
    return validateAmqpSettings(
      "destination.amqp",
      { url: given?.url ?? "", exchange: given?.exchange, routingKey: given?.routingKey, mandatory: given?.mandatory },
      guard,
      current,
    );
  },
  toProto: (settings) => ({ amqp: amqpSettingsView(settings) }),
  toRow: (settings) => ({ amqp: settings }),
  // A row without settings (none is stored so) reads as an empty URL: publishes fail naming it.
  fromRow: (row) => row.amqp ?? { url: "", ...amqpDefaults },
};

/**
 * AMQP 0-9-1 (RabbitMQ): each call is one persistent message, delivered
 * when the broker confirms it (docs/amqp.md). One connection
 * per destination and settings revision.
 */
export const amqpKind = defineKind({
  name: "amqp",
  label: "AMQP",
  proto: DestinationKind.AMQP,
  settings,
  createDelivery: (context) =>
    brokerDelivery<AmqpSettings, DestinationOf<"amqp", AmqpSettings>>(context, {
      settingsOf: (destination) => destination.amqp,
      createPublisher: (settings, publisherContext) => createAmqpPublisher({ ...settings, ...publisherContext }),
      targetOf: (settings) => `${maskUrlPassword(settings.url)} exchange "${settings.exchange}"`,
      system: "rabbitmq",
    }),
});
