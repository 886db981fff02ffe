import type { DestinationDraft } from "../destination-draft-types.js";
import { errorId, FieldError, type FieldErrors } from "../field-error.js";

interface BrokerFieldsProps {
  draft: DestinationDraft;
  errors: FieldErrors;
  onChange(change: Partial<DestinationDraft>): void;
}

/** One text field of a broker's settings, its server message (`destination.amqp.url: …`) under it. */
function TextField(props: {
  id: string;
  label: string;
  field: string;
  value: string;
  hint: string;
  placeholder?: string;
  secret?: boolean;
  errors: FieldErrors;
  onInput(value: string): void;
}) {
  const invalid = props.errors[props.field] !== undefined;
  const attributes = {
    id: props.id,
    autocomplete: "off",
    placeholder: props.placeholder,
    value: props.value,
    onInput: (e: { currentTarget: HTMLInputElement }) => props.onInput(e.currentTarget.value),
    "aria-invalid": invalid ? ("true" as const) : undefined,
    "aria-describedby": invalid ? errorId(props.field) : `hint-${props.id}`,
  };
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      {props.secret ? <input type="password" {...attributes} /> : <input type="text" {...attributes} />}
      <p id={`hint-${props.id}`} class="hint">
        {props.hint}
      </p>
      <FieldError errors={props.errors} field={props.field} />
    </div>
  );
}

const templateHint = "A template: {type}, {event}, {sourceId}, {destinationId}.";

/** An AMQP destination's broker: its URL (write-only: an edit shows it with the password masked, and sending that back keeps it). */
export function AmqpFields(props: BrokerFieldsProps) {
  const { draft, errors, onChange } = props;
  return (
    <fieldset>
      <legend>AMQP broker</legend>
      <TextField
        id="destination-amqp-url"
        label="Broker URL"
        field="amqp.url"
        placeholder="amqp://user:password@host:5672/vhost"
        value={draft.amqpUrl}
        hint="The password is never shown again: keep the masked URL to keep it."
        errors={errors}
        onInput={(amqpUrl) => onChange({ amqpUrl })}
      />
      <TextField
        id="destination-amqp-exchange"
        label="Exchange"
        field="amqp.exchange"
        value={draft.exchange}
        hint="Empty: the default exchange (the routing key names a queue)."
        errors={errors}
        onInput={(exchange) => onChange({ exchange })}
      />
      <TextField
        id="destination-amqp-routing-key"
        label="Routing key"
        field="amqp.routingKey"
        placeholder="{type}"
        value={draft.routingKey}
        hint={templateHint}
        errors={errors}
        onInput={(routingKey) => onChange({ routingKey })}
      />
      <label class="check">
        <input type="checkbox" checked={draft.mandatory} onChange={(e) => onChange({ mandatory: e.currentTarget.checked })} /> Mandatory (an
        unroutable message fails its attempt)
      </label>
    </fieldset>
  );
}

/** A NATS JetStream destination's servers, subject and credentials (write-only: shown as *** once set, and *** sent back keeps them). */
export function NatsFields(props: BrokerFieldsProps) {
  const { draft, errors, onChange } = props;
  return (
    <fieldset>
      <legend>NATS JetStream</legend>
      <div class="field">
        <label for="destination-nats-servers">Servers</label>
        <textarea
          id="destination-nats-servers"
          rows={2}
          placeholder="nats://host:4222"
          value={draft.natsServers}
          onInput={(e) => onChange({ natsServers: e.currentTarget.value })}
          aria-invalid={errors["nats.servers"] ? "true" : undefined}
          aria-describedby={errors["nats.servers"] ? errorId("nats.servers") : "hint-destination-nats-servers"}
        />
        <p id="hint-destination-nats-servers" class="hint">
          One URL a line, up to 5, of one cluster.
        </p>
        <FieldError errors={errors} field="nats.servers" prefix />
      </div>
      <TextField
        id="destination-nats-subject"
        label="Subject"
        field="nats.subject"
        placeholder="waypost.{type}"
        value={draft.subject}
        hint={templateHint}
        errors={errors}
        onInput={(subject) => onChange({ subject })}
      />
      <TextField
        id="destination-nats-token"
        label="Token"
        field="nats.token"
        secret
        value={draft.natsToken}
        hint="Or a user and password."
        errors={errors}
        onInput={(natsToken) => onChange({ natsToken })}
      />
      <TextField
        id="destination-nats-user"
        label="User"
        field="nats.user"
        value={draft.natsUser}
        hint=""
        errors={errors}
        onInput={(natsUser) => onChange({ natsUser })}
      />
      <TextField
        id="destination-nats-password"
        label="Password"
        field="nats.password"
        secret
        value={draft.natsPassword}
        hint=""
        errors={errors}
        onInput={(natsPassword) => onChange({ natsPassword })}
      />
    </fieldset>
  );
}
