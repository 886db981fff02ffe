import { DestinationKind, type Destination } from "../../../../gen/waypost/v1/destination_pb.js";
import { descriptorOfProto, type KindName } from "../../../delivery/kinds/descriptors.js";
import { integrationDraftOf, integrationProblems, integrationRequestOf, emptyIntegrationDraft } from "../integration-draft.js";
import { AmqpFields, NatsFields } from "./broker-fields.js";
import { IntegrationFields } from "./integration-fields.js";
import { SharedSecretFields } from "./shared-secret-fields.js";
import { SigningSecretFields } from "./signing-secret-fields.js";
import { WarehouseFields } from "./warehouse-fields.js";
import { WebhookFields } from "./webhook-fields.js";
import { batchDraftOf, batchRequestOf } from "./webhook-batch-fields.js";
import type { DestinationInit, KindForm } from "./kind-form-types.js";

const webhookForm: KindForm = {
  draft: (destination) => ({
    webhooks: destination
      ? destination.webhooks.map((w) => ({
          url: w.url,
          headers: Object.entries(w.headers).map(([name, value]) => ({ name, value })),
          batch: batchDraftOf(w.batch),
        }))
      : [{ url: "", headers: [] }],
    secretMode: destination ? "keep" : "set",
    secret: "",
    generateSigningSecret: false,
  }),
  request(draft) {
    const fields: DestinationInit = {
      webhooks: draft.webhooks.map((w) => ({
        url: w.url.trim(),
        headers: Object.fromEntries(w.headers.filter((h) => h.name.trim() !== "").map((h) => [h.name.trim(), h.value])),
        batch: batchRequestOf(w.batch),
      })),
    };
    const paths = ["webhooks"];
    if (draft.secretMode === "set" && draft.secret !== "") {
      fields.sharedSecret = draft.secret;
      paths.push("shared_secret");
    } else if (draft.secretMode === "clear") {
      fields.sharedSecret = "";
      paths.push("shared_secret");
    }
    return { fields, paths };
  },
  Fields: (props) => (
    <>
      <WebhookFields webhooks={props.draft.webhooks} errors={props.errors} onChange={(webhooks) => props.onChange({ webhooks })} />
      <SharedSecretFields {...props} />
      <SigningSecretFields
        destination={props.destination}
        generate={props.draft.generateSigningSecret}
        onGenerateChange={(generateSigningSecret) => props.onChange({ generateSigningSecret })}
        onRotated={props.onRotated}
      />
    </>
  ),
  Where: ({ destination }) => (
    <>
      {destination.webhooks.map((w) => (
        <div key={w.url}>
          <code>{w.url}</code>
        </div>
      ))}
    </>
  ),
  tell: (d) => d.webhooks[0]?.url ?? "",
  retry: { now: "Sends it", again: "Sends it again now to every webhook" },
  requestHeaders: true,
  discards: false,
};

const postgresForm: KindForm = {
  draft: (destination) => ({ postgresUrl: destination?.postgres?.url ?? "", schema: destination?.postgres?.schema ?? "" }),
  request: (draft) => ({
    fields: { postgres: { url: draft.postgresUrl.trim(), schema: draft.schema.trim() } },
    paths: ["postgres"],
  }),
  Fields: (props) => <WarehouseFields draft={props.draft} errors={props.errors} onChange={props.onChange} />,
  Where: ({ destination }) => (
    <div>
      {destination.postgres && (
        <>
          <code>{destination.postgres.url}</code> (schema <code>{destination.postgres.schema}</code>)
        </>
      )}
    </div>
  ),
  tell: (d) => (d.postgres ? `schema ${d.postgres.schema}` : ""),
  retry: { now: "Loads it into the warehouse", again: "Loads it into the warehouse again now" },
  requestHeaders: false,
  discards: true,
};

/** What a broker kind shows where the others show URLs. */
const brokerParts = {
  retry: { now: "Publishes it", again: "Publishes it again now" },
  requestHeaders: false,
  discards: false,
} as const;

const amqpForm: KindForm = {
  draft: (destination) => ({
    amqpUrl: destination?.amqp?.url ?? "",
    exchange: destination?.amqp?.exchange ?? "",
    routingKey: destination?.amqp?.routingKey ?? "",
    mandatory: destination?.amqp?.mandatory ?? true,
  }),
  request: (draft) => ({
    fields: {
      amqp: { url: draft.amqpUrl.trim(), exchange: draft.exchange.trim(), routingKey: draft.routingKey.trim(), mandatory: draft.mandatory },
    },
    paths: ["amqp"],
  }),
  Fields: (props) => <AmqpFields draft={props.draft} errors={props.errors} onChange={props.onChange} />,
  Where: ({ destination }) => (
    <div>
      {destination.amqp && (
        <>
          <code>{destination.amqp.url}</code> (exchange <code>{destination.amqp.exchange || '""'}</code>, key{" "}
          <code>{destination.amqp.routingKey}</code>)
        </>
      )}
    </div>
  ),
  tell: (d) => (d.amqp ? `exchange ${d.amqp.exchange || '""'}` : ""),
  ...brokerParts,
};

const natsForm: KindForm = {
  draft: (destination) => ({
    natsServers: destination?.nats?.servers.join("\n") ?? "",
    subject: destination?.nats?.subject ?? "",
    natsToken: destination?.nats?.token ?? "",
    natsUser: destination?.nats?.user ?? "",
    natsPassword: destination?.nats?.password ?? "",
  }),
  request: (draft) => ({
    fields: {
      nats: {
        servers: draft.natsServers
          .split("\n")
          .map((line) => line.trim())
          .filter((line) => line !== ""),
        subject: draft.subject.trim(),
        token: draft.natsToken,
        user: draft.natsUser.trim(),
        password: draft.natsPassword,
      },
    },
    paths: ["nats"],
  }),
  Fields: (props) => <NatsFields draft={props.draft} errors={props.errors} onChange={props.onChange} />,
  Where: ({ destination }) => (
    <div>
      {destination.nats && (
        <>
          <code>{destination.nats.servers.join(" ")}</code> (subject <code>{destination.nats.subject}</code>)
        </>
      )}
    </div>
  ),
  tell: (d) => (d.nats ? `subject ${d.nats.subject}` : ""),
  ...brokerParts,
};

const integrationForm: KindForm = {
  draft: (destination) => ({ integration: destination ? integrationDraftOf(destination) : emptyIntegrationDraft() }),
  request: (draft) => ({ fields: { integration: integrationRequestOf(draft.integration) }, paths: ["integration"] }),
  check: (draft) => integrationProblems(draft.integration),
  tested: (draft) => ({ kind: DestinationKind.INTEGRATION, integration: integrationRequestOf(draft.integration) }),
  Fields: (props) => (
    <IntegrationFields
      draft={props.draft.integration}
      errors={props.errors}
      creating={props.destination === undefined}
      onChange={(integration) => props.onChange({ integration })}
    />
  ),
  Where: ({ destination }) => (
    <div>
      {destination.integration && (
        <>
          <code>{destination.integration.slug}</code> ({destination.integration.subscriptions.length}{" "}
          {destination.integration.subscriptions.length === 1 ? "subscription" : "subscriptions"})
        </>
      )}
    </div>
  ),
  tell: (d) => (d.integration ? `integration ${d.integration.slug}` : ""),
  retry: { now: "Runs its matching subscriptions", again: "Runs its matching subscriptions again now" },
  requestHeaders: false,
  discards: false,
};

/** Each kind's form, by kind name: a kind without an entry does not compile. */
export const kindForms: Record<KindName, KindForm> = {
  webhook: webhookForm,
  postgres: postgresForm,
  amqp: amqpForm,
  nats: natsForm,
  integration: integrationForm,
};

/** The form of a destination's kind (unspecified reads as webhooks, as the server treats it). */
export function kindFormOf(destination: Pick<Destination, "kind">): KindForm {
  return kindForms[descriptorOfProto(destination.kind).name];
}
