import { type SettingField, SettingsFieldset } from "../views/settings-fieldset.js";
import type { KindForm } from "./kind-form.js";
import { brokerWording, Target, templateHint } from "./target.js";

/** An AMQP destination's part of the form: the broker URL (masked on edit), exchange, routing key template, mandatory. */
export type AmqpDraft = { url: string; exchange: string; routingKey: string; mandatory: boolean };

const fields: ReadonlyArray<SettingField<AmqpDraft>> = [
  {
    key: "url",
    field: "amqp.url",
    label: "Broker URL",
    placeholder: "amqp://user:password@host:5672/vhost",
    // Write-only: sending the masked URL back keeps the stored one.
    hint: "The password is never shown again: keep the masked URL to keep it.",
  },
  { key: "exchange", field: "amqp.exchange", label: "Exchange", hint: "Empty: the default exchange (the routing key names a queue)." },
  { key: "routingKey", field: "amqp.routingKey", label: "Routing key", placeholder: "{type}", hint: templateHint },
  { key: "mandatory", field: "amqp.mandatory", label: "Mandatory (an unroutable message fails its attempt)", input: "check" },
];

export const amqpForm: KindForm<AmqpDraft> = {
  draft: (destination) => ({
    url: destination?.amqp?.url ?? "",
    exchange: destination?.amqp?.exchange ?? "",
    routingKey: destination?.amqp?.routingKey ?? "",
    mandatory: destination?.amqp?.mandatory ?? true,
  }),
  request: (draft) => ({
    fields: {
      amqp: { url: draft.url.trim(), exchange: draft.exchange.trim(), routingKey: draft.routingKey.trim(), mandatory: draft.mandatory },
    },
    paths: ["amqp"],
  }),
  Fields: (props) => <SettingsFieldset legend="AMQP broker" fields={fields} {...props} />,
  Where: ({ destination: { amqp } }) => (
    <Target
      address={amqp?.url}
      parts={[
        ["exchange", amqp?.exchange || '""'],
        ["key", amqp?.routingKey ?? ""],
      ]}
    />
  ),
  tell: (d) => (d.amqp ? `exchange ${d.amqp.exchange || '""'}` : ""),
  ...brokerWording,
};
